import pkg.sub


def run():
    return pkg.sub.compute()


run()
