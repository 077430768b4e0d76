__all__ = ["start"]


def start():
    return _boot()


def _boot():
    return "booted"
