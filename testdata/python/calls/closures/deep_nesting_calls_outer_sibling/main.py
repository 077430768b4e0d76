def outer():
    def helper():
        return "h"

    def middle():
        def inner():
            return helper()

        return inner()

    return middle()


outer()
