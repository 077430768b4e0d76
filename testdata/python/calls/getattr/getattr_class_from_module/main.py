import models


def run():
    cls = getattr(models, "User")
    return cls("ann").greet()


run()
