import sys


def first():
    return 1


def second():
    return 2


config = {"hooks": {"run": first}}
if sys.argv:
    config["hooks"]["run"] = second
config["hooks"]["run"]()
