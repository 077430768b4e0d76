def a():
    return "a"


def b():
    return "b"


def inner():
    yield a


def outer():
    yield from inner()
    yield b


def run():
    return [fn() for fn in outer()]


run()
