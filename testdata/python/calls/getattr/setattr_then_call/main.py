class Emitter:
    pass


def on_event():
    return "event"


def run():
    emitter = Emitter()
    setattr(emitter, "handler", on_event)
    return emitter.handler()


run()
