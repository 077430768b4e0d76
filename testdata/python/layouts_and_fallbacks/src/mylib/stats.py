import mylib


def mean(values):
    import mylib._pure as pure
    return pure.slow_sum(values) / len(values)


def spread(values):
    return mylib.total(values) - mean(values)
