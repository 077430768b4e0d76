import sys


def fast():
    return "fast"


def safe():
    return "safe"


def run(flag):
    if flag:
        fn = fast
    else:
        fn = safe
    return fn()


run(len(sys.argv) > 5)
