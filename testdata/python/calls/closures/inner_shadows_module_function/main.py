def helper():
    return "module"


def outer():
    def helper():
        return "local"

    def inner():
        return helper()

    return inner()


outer()
