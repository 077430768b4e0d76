"""Writing PDF documents."""


class PdfWriter:
    """Collects pages and writes them to a new file."""

    def __init__(self):
        self.pages = []

    def add_page(self, page):
        """Append a page."""
        self.pages.append(page)

    def write(self, path):
        """Write the document to `path`."""
        with open(path, "wb") as handle:
            handle.write(b"%PDF-1.7\n")
