"""Splitting CSV tables."""

from csvsplit.split import split_by

__all__ = ["split_by"]
