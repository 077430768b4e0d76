def log(msg):
    return msg


def process(items):
    def handle(item):
        log(item)
        return item

    return [handle(i) for i in items]


process([1, 2])
