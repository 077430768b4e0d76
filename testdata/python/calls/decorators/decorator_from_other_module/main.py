from deco import cached


@cached
def load(key):
    return key.upper()


def run():
    return load("a")


run()
