def fallback():
    return "fallback"


DEFAULT = lambda: fallback()


def run():
    return DEFAULT()


run()
