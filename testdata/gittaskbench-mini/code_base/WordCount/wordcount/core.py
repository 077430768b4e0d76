"""Counting, ranking and saving words."""

import csv
import re
from collections import Counter

WORD = re.compile(r"[A-Za-z']+")


def count_words(text, lowercase=True):
    """Counts the words of `text`; folds case unless `lowercase` is false."""
    words = WORD.findall(text)
    if lowercase:
        words = [w.lower() for w in words]
    return Counter(words)


def top_words(counts, n):
    """The `n` most frequent words as (word, count), ties broken by word."""
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n]


def write_csv(rows, path):
    """Writes (word, count) rows with the header word,count."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["word", "count"])
        writer.writerows(rows)
