class Base:
    def __init__(self):
        self.kind = "base"

    @classmethod
    def create(cls):
        return cls()


class Special(Base):
    def __init__(self):
        super().__init__()
        self.kind = "special"


def run():
    return Special.create()


run()
