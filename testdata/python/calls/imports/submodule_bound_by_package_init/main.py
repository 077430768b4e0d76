import pkg


def run():
    return pkg.sub.compute()


run()
