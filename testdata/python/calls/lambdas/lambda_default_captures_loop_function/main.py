def a():
    return "a"


def b():
    return "b"


def run():
    callbacks = [lambda f=f: f() for f in (a, b)]
    return [cb() for cb in callbacks]


run()
