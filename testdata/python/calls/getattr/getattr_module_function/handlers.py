def on_start():
    return "started"


def on_stop():
    return "stopped"
