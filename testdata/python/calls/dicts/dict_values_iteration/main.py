def check_disk():
    return True


def check_net():
    return True


CHECKS = {"disk": check_disk, "net": check_net}


def run():
    return all(fn() for fn in CHECKS.values())


run()
