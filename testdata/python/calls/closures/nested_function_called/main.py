def outer():
    def inner():
        return "inner"

    return inner()


outer()
