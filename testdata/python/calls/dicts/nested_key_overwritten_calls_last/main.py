def first():
    return 1


def second():
    return 2


config = {"hooks": {"run": first}}
config["hooks"]["run"] = second
config["hooks"]["run"]()
