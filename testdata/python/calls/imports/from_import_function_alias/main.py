from mathx import compute as calc


def run():
    return calc(2)


run()
