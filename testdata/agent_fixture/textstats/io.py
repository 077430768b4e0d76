"""Reading texts and writing results."""

import csv


def read_text(path):
    """Reads a UTF-8 text file."""
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def write_csv(rows, path):
    """Writes (word, count) rows to a CSV file with a header."""
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["word", "count"])
        for word, count in rows:
            writer.writerow([word, count])
