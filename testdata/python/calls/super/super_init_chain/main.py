class Base:
    def __init__(self, name):
        self.name = name


class Child(Base):
    def __init__(self, name, age):
        super().__init__(name)
        self.age = age


def run():
    return Child("a", 3)


run()
