from collections import OrderedDict as OD
from os import path


def run():
    table = OD()
    table["name"] = path.basename("/tmp/x.txt")
    return table


run()
