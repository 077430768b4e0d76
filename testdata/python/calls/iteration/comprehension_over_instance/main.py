def double(x):
    return 2 * x


class Numbers:
    def __iter__(self):
        return iter([1, 2, 3])


def doubled():
    return [double(n) for n in Numbers()]
