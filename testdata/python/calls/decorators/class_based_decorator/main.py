class Trace:
    def __init__(self, func):
        self.func = func
        self.calls = 0

    def __call__(self, *args):
        self.calls += 1
        return self.func(*args)


@Trace
def work(x):
    return x + 1


def run():
    return work(1)


run()
