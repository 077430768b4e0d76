def a():
    return "a"


def b():
    return "b"


def c():
    return "c"


def pick(cmd):
    match cmd:
        case "a":
            fn = a
        case "b":
            fn = b
        case _:
            fn = c
    return fn()


pick("a")
pick("b")
pick("z")
