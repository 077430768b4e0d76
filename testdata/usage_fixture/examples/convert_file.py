"""Convert a file to Markdown with usagedemo.

Run it with the path of a text file.
"""

import sys

from usagedemo import convert
from usagedemo.formats import to_markdown

if __name__ == "__main__":
    print(to_markdown(convert(sys.argv[1])))
