class Cache:
    def __init__(self, size):
        self.size = size
        self.reset()

    def reset(self):
        self.items = {}


def run():
    return Cache(10)


run()
