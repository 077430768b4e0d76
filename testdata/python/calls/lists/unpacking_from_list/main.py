def prepare():
    return "prepare"


def execute():
    return "execute"


def run():
    steps = [prepare, execute]
    setup, action = steps
    return action()


run()
