import sys


def default():
    return "default"


def plugin():
    return "plugin"


def install(table):
    table["hook"] = plugin


hooks = {"hook": default}
if sys.argv:
    install(hooks)
hooks["hook"]()
