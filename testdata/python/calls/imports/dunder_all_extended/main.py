from lib import *


def run():
    return first() + second()


run()
