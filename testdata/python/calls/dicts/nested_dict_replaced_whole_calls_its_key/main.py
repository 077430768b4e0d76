def first():
    return 1


def second():
    return 2


def third():
    return 3


config = {"hooks": {"run": first}}
config["hooks"]["run"] = second
config["hooks"] = {"run": third}
config["hooks"]["run"]()
