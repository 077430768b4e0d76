def load():
    return "load"


def save():
    return "save"


def run():
    table = {fn.__name__: fn for fn in (load, save)}
    return [fn() for fn in table.values()]


run()
