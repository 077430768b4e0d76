"""Counting words."""

import re

from textstats.tokenize import words


class WordCounter:
    """Counts word frequencies over one or more texts."""

    def __init__(self, lowercase=True):
        self.lowercase = lowercase
        self.counts = {}

    def feed(self, text):
        """Adds the words of `text` to the counts."""
        for word in words(text, lowercase=self.lowercase):
            self.counts[word] = self.counts.get(word, 0) + 1
        return self

    def top(self, n):
        """The `n` most frequent words as (word, count) pairs, ties by word."""
        ranked = sorted(self.counts.items(), key=lambda item: (-item[1], item[0]))
        return ranked[:n]

    def total(self):
        """Number of words counted."""
        return sum(self.counts.values())
