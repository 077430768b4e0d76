def fine():
    return helper()


def helper():
    return 1


def broken(:
    return fine(
