def first():
    return 1


def second():
    return 2


def run():
    tasks = []
    tasks.append(first)
    tasks.append(second)
    return [task() for task in tasks]


run()
