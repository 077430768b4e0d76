def parse(raw):
    return raw.strip()


class Loader:
    def source(self):
        return [" a ", " b "]

    def items(self):
        for raw in self.source():
            yield parse(raw)


def run():
    return list(Loader().items())


run()
