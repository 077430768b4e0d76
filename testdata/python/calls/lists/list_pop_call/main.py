def undo_a():
    return "a"


def undo_b():
    return "b"


def run():
    stack = [undo_a, undo_b]
    return stack.pop()()


run()
