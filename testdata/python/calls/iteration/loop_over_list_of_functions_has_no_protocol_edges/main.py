def first():
    return 1


def second():
    return 2


def run_all(steps):
    for step in steps:
        step()


run_all([first, second])
for f in (first,):
    f()
