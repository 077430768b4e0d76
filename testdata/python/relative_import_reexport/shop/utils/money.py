"""Money helpers."""

__all__ = ["format_price", "round_cents"]


def round_cents(value):
    return round(value, 2)


def format_price(value):
    return "$" + str(round_cents(value))


def _private():
    pass
