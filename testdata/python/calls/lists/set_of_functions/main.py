def alpha():
    return "a"


def beta():
    return "b"


def run():
    return sorted(fn() for fn in {alpha, beta})


run()
