import functools


def add(a, b):
    return a + b


def run():
    add_one = functools.partial(add, 1)
    return add_one(2)


run()
