def weight(x):
    return x * 2


def run():
    return sum(weight(x) for x in range(3))


run()
