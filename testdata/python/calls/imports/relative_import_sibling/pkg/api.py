from .helpers import tidy


def handle():
    return tidy(" x ")
