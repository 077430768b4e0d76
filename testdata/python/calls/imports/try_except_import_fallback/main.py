try:
    from fastparse import parse
except ImportError:
    from slowparse import parse


def run():
    return parse("1 2")


run()
