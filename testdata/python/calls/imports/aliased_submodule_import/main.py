import pkg.util as u


def run():
    return u.slug("A B")


run()
