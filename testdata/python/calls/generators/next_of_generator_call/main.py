def primary():
    return "primary"


def secondary():
    return "secondary"


def candidates():
    yield primary
    yield secondary


def run():
    return next(candidates())()


run()
