import handlers


def run():
    return getattr(handlers, "on_start")()


run()
