class Base:
    @classmethod
    def create(cls):
        return cls()


class Derived(Base):
    @classmethod
    def create(cls):
        obj = super().create()
        return obj


def run():
    return Derived.create()


run()
