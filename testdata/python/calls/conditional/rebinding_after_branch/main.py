import sys


def fast():
    return "fast"


def safe():
    return "safe"


def final():
    return "final"


def run(flag):
    if flag:
        fn = fast
    else:
        fn = safe
    fn = final
    return fn()


run(len(sys.argv) > 5)
