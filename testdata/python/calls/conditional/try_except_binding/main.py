def special():
    return "special"


def default():
    return "default"


REGISTRY = {"x": special}


def lookup(key):
    try:
        handler = REGISTRY[key]
    except KeyError:
        handler = default
    return handler()


lookup("x")
lookup("y")
