class Counter:
    def __init__(self):
        self.n = 0

    def add(self):
        self.n += 1
        return self.n


def make_ticker():
    counter = Counter()

    def tick():
        return counter.add()

    return tick


def run():
    return make_ticker()()


run()
