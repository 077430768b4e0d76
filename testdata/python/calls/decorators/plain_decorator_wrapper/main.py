def log_calls(func):
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)

    return wrapper


@log_calls
def greet(name):
    return "hi " + name


def run():
    return greet("bob")


run()
