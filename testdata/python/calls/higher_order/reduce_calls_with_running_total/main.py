import functools
from functools import reduce


def combine(total, item):
    return total + item


def merge(total, item):
    return total | item


def total(xs):
    return functools.reduce(combine, xs, 0)


def union(sets):
    return reduce(merge, sets)
