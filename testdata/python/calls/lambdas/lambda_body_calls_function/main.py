def score(item):
    return len(item)


def run():
    items = ["ccc", "a", "bb"]
    return sorted(items, key=lambda x: score(x))


run()
