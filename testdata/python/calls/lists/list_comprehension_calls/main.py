def a():
    return 1


def b():
    return 2


def run():
    fns = [a, b]
    return [fn() for fn in fns]


run()
