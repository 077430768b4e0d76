def invoke(callback, value):
    return callback(value)


def wrapper(**kwargs):
    return invoke(**kwargs)


def show(value):
    return f"<{value}>"


def run():
    return wrapper(callback=show, value=1)


run()
