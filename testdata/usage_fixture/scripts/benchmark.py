#!/usr/bin/env python
# Measures how fast documents load.
# Prints one line per run.

from usagedemo.core import Document

Document("x" * 1000)
