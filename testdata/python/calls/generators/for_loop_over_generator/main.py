def on_start():
    return "start"


def on_stop():
    return "stop"


def hooks():
    for hook in (on_start, on_stop):
        yield hook


def run():
    out = []
    for hook in hooks():
        out.append(hook())
    return out


run()
