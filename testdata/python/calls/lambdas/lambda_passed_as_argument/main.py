def apply(fn):
    return fn()


def work():
    return "work"


def run():
    return apply(lambda: work())


run()
