class Base:
    @property
    def label(self):
        return "base"


class Child(Base):
    @property
    def label(self):
        return super().label + "/child"


def run():
    return Child().label


run()
