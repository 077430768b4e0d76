class Builder:
    def __init__(self):
        self.parts = []

    def add(self, part):
        self.parts.append(part)
        return self

    def build(self):
        return "".join(self.parts)


def run():
    return Builder().add("a").add("b").build()


run()
