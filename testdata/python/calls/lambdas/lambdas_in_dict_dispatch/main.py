def inc(x):
    return x + 1


def dec(x):
    return x - 1


def run():
    ops = {"inc": lambda x: inc(x), "dec": lambda x: dec(x)}
    return ops["inc"](1) + ops["dec"](1)


run()
