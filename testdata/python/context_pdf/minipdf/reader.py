"""Reading PDF documents."""
from .page import Page
from .crypto import decrypt_stream


class PdfReader:
    """Opens a PDF file and gives access to its pages.

    Args:
        path: The file to open.
    """

    def __init__(self, path):
        self.path = path
        self.pages = [Page(self, i) for i in range(self._count_pages())]

    def _count_pages(self):
        return 1

    def decrypt(self, password):
        """Decrypt an encrypted document with its password."""
        return decrypt_stream(self.path, password)

    def metadata(self):
        """The document information dictionary."""
        return {}
