def make_a():
    return "a"


def make_b():
    return "b"


def producers():
    yield make_a
    yield make_b


def run():
    return [p() for p in producers()]


run()
