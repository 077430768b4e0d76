def apply(fn, x):
    return fn(x)


def double(x):
    return 2 * x


def run():
    return apply(double, 21)


run()
