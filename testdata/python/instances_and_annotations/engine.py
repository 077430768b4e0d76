from typing import Optional


class Engine:
    def start(self):
        return True

    def stop(self):
        return False


class Client:
    def fetch(self, url):
        return url


class Car:
    wheels: Engine

    def __init__(self, client: Client):
        self.engine = Engine()
        self.client = client
        self.spare: Optional[Engine] = None

    def drive(self):
        self.engine.start()
        self.client.fetch("x")
        self.spare.stop()
        self.wheels.start()


def build() -> Engine:
    return Engine()


def use(e: Engine, c: "Client"):
    e.start()
    c.fetch("y")
    build().stop()
    local = Engine()
    local.stop()
    Engine().start()
