def square(x):
    return x * x


def add(a, b):
    return a + b


def squares(xs):
    return list(map(square, xs))


sums = map(add, [1, 2], [3, 4])
