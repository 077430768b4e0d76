def fetch():
    return [1, 2, 3]


def process(items):
    return len(items)


def run():
    if (fn := fetch) is not None:
        return process(fn())
    return 0


run()
