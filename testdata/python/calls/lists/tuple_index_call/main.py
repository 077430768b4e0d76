def low():
    return "low"


def high():
    return "high"


def run():
    options = (low, high)
    return options[1]()


run()
