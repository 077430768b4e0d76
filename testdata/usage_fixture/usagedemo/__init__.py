"""Usage demo: converts documents between formats."""

from .core import Document, convert
from .formats import *
from . import formats
from ._private import helper as _helper

__all__ = ["convert", "Document", "load", "VERSION"]
__all__ += ["to_markdown"]

VERSION = "1.0"


def load(path, encoding="utf-8"):
    """Loads a document from a file."""
    return Document(open(path, encoding=encoding).read())
