def first():
    return 1


def second():
    return 2


def third():
    return 3


def run():
    head, *rest = first, second, third
    total = head()
    for fn in rest:
        total += fn()
    return total


run()
