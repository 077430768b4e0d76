def header():
    return "h"


def body():
    return "b"


def footer():
    return "f"


def run():
    parts = [header, body, footer]
    return "".join(part() for part in parts[1:])


run()
