"""Command line: python -m textstats.cli INPUT OUTPUT [N]."""

import sys

from textstats.core import WordCounter
from textstats.io import read_text, write_csv


def main(argv):
    """Counts the words of argv[0] and writes the top N to argv[1]."""
    n = int(argv[2]) if len(argv) > 2 else 3
    counter = WordCounter().feed(read_text(argv[0]))
    write_csv(counter.top(n), argv[1])


if __name__ == "__main__":
    main(sys.argv[1:])
