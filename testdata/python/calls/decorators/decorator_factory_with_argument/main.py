def repeat(times):
    def decorate(func):
        def wrapper(*args):
            for _ in range(times):
                func(*args)

        return wrapper

    return decorate


@repeat(2)
def ping():
    return "pong"


def run():
    ping()


run()
