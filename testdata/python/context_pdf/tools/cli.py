"""Command-line entry point."""
from minipdf import PdfReader, PdfWriter


def main():
    reader = PdfReader("in.pdf")
    writer = PdfWriter()
    for page in reader.pages:
        writer.add_page(page.rotate(90))
    writer.write("out.pdf")


if __name__ == "__main__":
    main()
