def load():
    return "data"


def run():
    a = b = load
    a()
    return b()


run()
