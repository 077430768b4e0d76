"""The document model and the conversion."""


class Document:
    """A document in memory."""

    def __init__(self, text: str, *, title=None):
        self.text = text
        self.title = title


def convert(source, target="txt", *, strict=False) -> str:
    """Converts a document to the target format."""
    return Document(source).text
