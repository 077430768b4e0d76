def connect_default():
    return "default"


def connect_fast():
    return "fast"


def close():
    return "close"


options = {"connect": connect_default, "close": close}
options.update({"connect": connect_fast})
options["connect"]()
options["close"]()
