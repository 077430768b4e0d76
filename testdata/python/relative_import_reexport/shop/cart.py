"""Shopping cart."""
from . import utils
from .utils import money as m
from .utils.money import round_cents


class Cart:
    """Holds items and computes totals."""

    def __init__(self):
        self.items = []

    def add(self, name, price):
        self.items.append((name, round_cents(price)))

    def total(self):
        return m.round_cents(sum(p for _, p in self.items))

    def describe(self):
        return utils.money.format_price(self.total())
