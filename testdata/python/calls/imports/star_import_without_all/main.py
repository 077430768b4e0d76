from lib import *


def run():
    return helper() + other()


run()
