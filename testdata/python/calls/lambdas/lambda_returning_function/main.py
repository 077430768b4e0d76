def handler():
    return "handled"


def run():
    pick = lambda: handler
    return pick()()


run()
