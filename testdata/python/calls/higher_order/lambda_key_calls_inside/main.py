def weight(item):
    return item[1]


def heaviest(items):
    return max(items, key=lambda item: weight(item))
