class Multiplier:
    def __init__(self, factor):
        self.factor = factor

    def __call__(self, value):
        return value * self.factor


def run():
    triple = Multiplier(3)
    return triple(4)


run()
