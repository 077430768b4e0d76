from ..util import helper


def run():
    return helper()
