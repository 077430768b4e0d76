class Engine:
    @property
    def power(self):
        return 100


class Car:
    def __init__(self):
        self._engine = Engine()

    @property
    def engine(self):
        return self._engine


def run():
    return Car().engine.power


run()
