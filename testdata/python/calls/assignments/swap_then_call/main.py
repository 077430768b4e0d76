def red():
    return "red"


def blue():
    return "blue"


def run():
    a, b = red, blue
    a, b = b, a
    return a()


run()
