def normalize(x):
    return x / 10


def square(x):
    return x * x


def process(value, transform=normalize):
    return transform(value)


def run():
    return process(5) + process(5, transform=square)


run()
