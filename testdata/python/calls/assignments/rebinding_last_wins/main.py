def old_handler():
    return "old"


def new_handler():
    return "new"


def run():
    handler = old_handler
    handler = new_handler
    return handler()


run()
