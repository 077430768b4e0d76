import sys


def default():
    return "default"


def plugin():
    return "plugin"


def install(table):
    table["run"] = plugin


config = {"hooks": {"run": default}}
if sys.argv:
    install(config["hooks"])
config["hooks"]["run"]()
