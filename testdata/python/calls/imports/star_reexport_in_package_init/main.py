import pkg


def run():
    return pkg.start()


run()
