def mul(a, b):
    return a * b


def run():
    square = lambda x: mul(x, x)
    return square(3)


run()
