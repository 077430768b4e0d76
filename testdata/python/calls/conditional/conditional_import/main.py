import sys

if sys.platform == "win32":
    from winimpl import open_file
else:
    from posiximpl import open_file


def run():
    return open_file("x")


run()
