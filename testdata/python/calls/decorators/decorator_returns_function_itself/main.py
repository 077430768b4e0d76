ROUTES = []


def route(func):
    ROUTES.append(func)
    return func


@route
def index():
    return "index"


def run():
    return index()


run()
