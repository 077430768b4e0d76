def base():
    return "base"


def extra():
    return "extra"


def run(flag):
    fn = base
    if flag:
        fn = extra
    return fn()


run(True)
run(False)
