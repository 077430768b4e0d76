"""A tiny shop package that re-exports its public API."""
from .cart import Cart
from .payments import charge as pay
from .utils.money import *

__all__ = ["Cart", "pay", "format_price"]
