def start():
    return "start"


def stop():
    return "stop"


def unknown():
    return "?"


HANDLERS = {"start": start, "stop": stop}


def dispatch(kind):
    handler = HANDLERS.get(kind, unknown)
    return handler()


dispatch("start")
dispatch("stop")
dispatch("other")
