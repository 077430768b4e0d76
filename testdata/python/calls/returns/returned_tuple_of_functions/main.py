def start():
    return "start"


def stop():
    return "stop"


def lifecycle():
    return start, stop


def run():
    begin, end = lifecycle()
    begin()
    end()


run()
