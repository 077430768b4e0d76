__all__ = ["first"]
__all__ += ["second"]


def first():
    return 1


def second():
    return 2
