from pathlib import Path


def exists(name):
    p = Path(name)
    return p.exists()


exists("setup.cfg")
