def first():
    return 1


def second():
    return 2


handlers = {"run": first}
handlers["run"] = second
handlers["run"]()
