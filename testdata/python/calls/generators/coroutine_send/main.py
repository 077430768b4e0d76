def handle(item):
    return item


def consumer():
    while True:
        item = yield
        handle(item)


def run():
    c = consumer()
    next(c)
    c.send("x")
    c.send("y")


run()
