def split_handlers():
    return start, stop


def start():
    return "start"


def stop():
    return "stop"


def run():
    on, off = split_handlers()
    on()
    off()


run()
