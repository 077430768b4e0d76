def handle(event):
    return event


def get_handler():
    return handle


def run():
    handler = get_handler()
    return handler("click")


run()
