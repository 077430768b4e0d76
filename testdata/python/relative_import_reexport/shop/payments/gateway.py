"""Payment gateway."""
from ..utils.money import round_cents


def charge(cart, card):
    """Charge the card for the cart total."""
    amount = round_cents(cart.total())
    return _send(card, amount)


def _send(card, amount):
    return {"card": card, "amount": amount}
