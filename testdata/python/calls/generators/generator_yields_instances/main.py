class Worker:
    def __init__(self, n):
        self.n = n

    def work(self):
        return self.n


def workers():
    yield Worker(1)
    yield Worker(2)


def run():
    return [w.work() for w in workers()]


run()
