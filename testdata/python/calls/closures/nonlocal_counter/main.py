def bump():
    return 1


def counter():
    count = 0

    def inc():
        nonlocal count
        count += bump()
        return count

    return inc


def run():
    c = counter()
    c()
    return c()


run()
