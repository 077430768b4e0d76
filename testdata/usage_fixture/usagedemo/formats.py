__all__ = ["to_markdown"]


def to_markdown(document):
    """Renders a document as Markdown."""
    return document.text
