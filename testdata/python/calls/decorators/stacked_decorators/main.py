def bold(func):
    def wrapper():
        return "<b>" + func() + "</b>"

    return wrapper


def italic(func):
    def wrapper():
        return "<i>" + func() + "</i>"

    return wrapper


@bold
@italic
def text():
    return "hi"


def run():
    return text()


run()
