def a():
    return "a"


def b():
    return "b"


def run():
    fn = a
    for _ in range(2):
        fn()
        fn = b


run()
