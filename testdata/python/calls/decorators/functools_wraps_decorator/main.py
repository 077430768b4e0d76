import functools


def timed(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)

    return wrapper


@timed
def work(n):
    return n * 2


def run():
    return work(3)


run()
