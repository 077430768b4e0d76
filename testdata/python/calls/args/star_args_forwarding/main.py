def call_with(fn, *args):
    return fn(*args)


def forward(*args):
    return call_with(*args)


def add(a, b):
    return a + b


def run():
    return forward(add, 1, 2)


run()
