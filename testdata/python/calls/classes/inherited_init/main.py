class Base:
    def __init__(self, name):
        self.name = name


class Child(Base):
    def hello(self):
        return self.name


def run():
    return Child("x").hello()


run()
