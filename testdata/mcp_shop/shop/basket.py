class Basket:
    """Goods and their prices."""

    def __init__(self):
        self.items = []

    def add(self, name, price):
        self.items.append((name, price))

    def total(self):
        return sum(price_of(i) for i in self.items)


def price_of(item):
    return item[1]
