import sys


def plain():
    return "plain"


def verbose():
    return "verbose"


printers = {"print": plain}
if len(sys.argv) > 1:
    printers["print"] = verbose
printers["print"]()
