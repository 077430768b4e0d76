class Registry:
    def __init__(self):
        self.names = []

    def add(self, name):
        self.names.append(name)


class App:
    registry = Registry()

    def register(self, name):
        self.registry.add(name)


def run():
    App().register("users")


run()
