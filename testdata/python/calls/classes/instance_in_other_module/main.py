from shapes import Circle


def run():
    c = Circle(2)
    return c.area()


run()
