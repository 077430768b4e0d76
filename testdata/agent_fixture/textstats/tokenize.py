"""Splitting text into words."""

import re

WORD = re.compile(r"[A-Za-z']+")


def words(text, lowercase=True):
    """The words of `text`, optionally lowercased."""
    found = WORD.findall(text)
    if lowercase:
        return [w.lower() for w in found]
    return found
