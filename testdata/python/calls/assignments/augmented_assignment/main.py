def compute():
    return 1


def extra():
    return 2


def run():
    total = 0
    total += compute()
    steps = [compute]
    steps += [extra]
    for step in steps:
        total += step()
    return total


run()
