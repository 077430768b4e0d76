COMMANDS = {}


def command(name):
    def deco(fn):
        COMMANDS[name] = fn
        return fn

    return deco


@command("hello")
def hello():
    return "hello"


@command("bye")
def bye():
    return "bye"


def dispatch(name):
    return COMMANDS[name]()


dispatch("hello")
dispatch("bye")
