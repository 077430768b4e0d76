listeners = []


def subscribe(fn):
    listeners.append(fn)


def emit():
    for fn in listeners:
        fn()


def on_open():
    return "open"


def on_close():
    return "close"


subscribe(on_open)
subscribe(on_close)
emit()
