"""A page of a PDF document."""


class Page:
    """One page: its size, rotation and content."""

    def __init__(self, reader, index):
        self.reader = reader
        self.index = index
        self.rotation = 0

    def extract_text(self, layout=False):
        """Extract the text of the page.

        Args:
            layout: Keep the visual layout of the text.

        Returns:
            The text, in reading order.
        """
        operators = self._content_operators()
        return "".join(op for op in operators if op)

    def rotate(self, degrees):
        """Rotate the page clockwise."""
        self.rotation = (self.rotation + degrees) % 360
        return self

    def _content_operators(self):
        return []
