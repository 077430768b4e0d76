def initial():
    return "initial"


def left():
    return "left"


def right():
    return "right"


def run(flag):
    fn = initial
    if flag:
        fn = left
    else:
        fn = right
    return fn()


run(True)
run(False)
