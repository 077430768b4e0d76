"""Word statistics: count words in texts and save the most frequent ones."""

from textstats.core import WordCounter

__all__ = ["WordCounter"]
