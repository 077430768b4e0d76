def outer(fn):
    return inner(fn)


def inner(fn):
    return fn()


def target():
    return 42


def run():
    return outer(target)


run()
