class Counter:
    def __init__(self):
        self.value = 0

    def increment(self):
        self.value += 1


def repeat(fn, times):
    for _ in range(times):
        fn()


def run():
    counter = Counter()
    repeat(counter.increment, 3)
    return counter.value


run()
