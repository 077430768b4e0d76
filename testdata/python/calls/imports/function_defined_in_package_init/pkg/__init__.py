from .config import load


def setup():
    return load()
