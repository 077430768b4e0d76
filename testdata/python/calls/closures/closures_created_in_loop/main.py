def a():
    return "a"


def b():
    return "b"


def run():
    calls = []
    for fn in (a, b):
        def call(fn=fn):
            return fn()

        calls.append(call)
    return [c() for c in calls]


run()
