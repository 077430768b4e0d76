def alpha():
    return "a"


def beta():
    return "b"


def order(handlers):
    return sorted(handlers)


first = min([alpha, beta], key=None)
order([alpha, beta])
