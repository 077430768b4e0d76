from lib import *


def run():
    return public()


run()
