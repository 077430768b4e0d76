def parse():
    return 1


def check():
    return 2


def emit():
    return 3


stages = [parse, check, emit]
later = stages[1:3]
later[0]()
for stage in stages[:1]:
    stage()
