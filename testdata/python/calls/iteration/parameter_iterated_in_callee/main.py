class Pages:
    def __iter__(self):
        return self

    def __next__(self):
        raise StopIteration


def count(pages):
    total = 0
    for _ in pages:
        total += 1
    return total


count(Pages())
