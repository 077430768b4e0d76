def compute_total(items):
    return sum(items)


class Order:
    def __init__(self, items):
        self.items = items

    @property
    def total(self):
        return compute_total(self.items)


def run():
    order = Order([1, 2])
    return order.total


run()
