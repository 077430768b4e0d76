"""Helpers with thorough documentation.

This module is documented in detail, with every section a reader expects,
so that its documentation score is the highest in the repository.

Examples:
    >>> describe(1)
    'one'
"""


def describe(value):
    """Describe a number in words.

    Args:
        value: The number to describe.

    Returns:
        The English word for the number.

    Examples:
        >>> describe(2)
        'two'
    """
    return {1: "one", 2: "two"}.get(value, "many")
