"""minipdf: read, write and extract text from PDF files."""
from .reader import PdfReader
from .writer import PdfWriter
