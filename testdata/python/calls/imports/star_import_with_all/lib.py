__all__ = ["public"]


def public():
    return hidden()


def hidden():
    return 1
