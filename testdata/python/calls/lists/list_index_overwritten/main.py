def first():
    return 1


def second():
    return 2


def third():
    return 3


callbacks = [first, second]
callbacks[0] = third
callbacks[0]()
callbacks[1]()
