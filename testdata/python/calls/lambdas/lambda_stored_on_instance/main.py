def helper():
    return "help"


class Widget:
    def __init__(self):
        self.action = lambda: helper()

    def fire(self):
        return self.action()


def run():
    return Widget().fire()


run()
