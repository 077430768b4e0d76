def a():
    return "a"


def b():
    return "b"


def c():
    return "c"


def run():
    steps = [a]
    steps.extend([b])
    steps.insert(0, c)
    return [step() for step in steps]


run()
