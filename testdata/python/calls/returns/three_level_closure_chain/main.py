def leaf():
    return "leaf"


def outer():
    def middle():
        def inner():
            return leaf()

        return inner

    return middle


def run():
    return outer()()()


run()
