class Tagged:
    pass


class Named:
    def __init__(self, name):
        self.name = name


class Item(Tagged, Named):
    pass


def run():
    return Item("x")


run()
