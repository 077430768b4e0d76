import functools


def logged(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        note(func.__name__)
        return func(*args, **kwargs)

    return wrapper


def note(text):
    print(text)


def registry(name):
    def register(func):
        return func

    return register


@logged
def compute(x):
    return square(x)


@registry("sq")
def square(x):
    return x * x


def apply(fn, value):
    return fn(value)


def outer():
    def inner():
        return compute(2)

    return inner()


def run():
    apply(square, 3)
    apply(fn=compute, value=4)
    handler = lambda v: note(v)
    handler(1)
    outer()
    undefined_function()
