import pkg


def run():
    return pkg.setup()


run()
