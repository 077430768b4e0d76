class Starter:
    def crank(self):
        return "vroom"


class Engine:
    def __init__(self):
        self.starter = Starter()


class Car:
    def __init__(self):
        self.engine = Engine()

    def start(self):
        return self.engine.starter.crank()


def run():
    return Car().start()


run()
