def make_adder(n):
    def add(x):
        return n + x

    return add


def run():
    add5 = make_adder(5)
    return add5(1)


run()
