def read():
    return "read"


def write():
    return "write"


BASE = {"read": read}
EXTRA = {"write": write}


def run():
    merged = {**BASE, **EXTRA}
    return merged["read"]() + merged["write"]()


run()
