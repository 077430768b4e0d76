def helper():
    return 1


def other():
    return 2


def _private():
    return 3
