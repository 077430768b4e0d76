def escape(value):
    return value


def on_save():
    return "saved"


def on_delete():
    return "deleted"


def render(*args):
    return list(map(escape, args))


def show(value):
    cleaned = escape(value)
    return cleaned()


render(on_save, on_delete)
show(str)
