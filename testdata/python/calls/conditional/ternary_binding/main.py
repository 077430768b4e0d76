import sys


def compact():
    return "compact"


def pretty():
    return "pretty"


def run(flag):
    fmt = compact if flag else pretty
    return fmt()


run("-c" in sys.argv)
