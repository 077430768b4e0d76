def load():
    return "load"


def load_cached():
    return "cached"


def start(cached):
    steps = {"load": load, "other": load}
    steps["load"] = load_cached
    steps["load"]()
    return steps["other"]


start(True)
