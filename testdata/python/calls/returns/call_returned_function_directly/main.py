def handle(event):
    return event


def get_handler():
    return handle


def run():
    return get_handler()("click")


run()
