from pkg import Engine


def run():
    return Engine().start()


run()
