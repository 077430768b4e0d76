import sys


def default():
    return "default"


def plugin():
    return "plugin"


config = {"hooks": {"run": default}}
hooks = config["hooks"]
if sys.argv:
    hooks["run"] = plugin
config["hooks"]["run"]()
