def first():
    return 1


def second():
    return 2


def run():
    handler = first

    def switch():
        nonlocal handler
        handler = second

    def fire():
        return handler()

    fire()
    switch()
    return fire()


run()
