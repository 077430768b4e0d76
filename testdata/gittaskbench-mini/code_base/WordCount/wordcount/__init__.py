"""Word counting for plain text."""

from wordcount.core import count_words, top_words, write_csv

__all__ = ["count_words", "top_words", "write_csv"]
