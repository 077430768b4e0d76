class StoreError(Exception):
    def report(self):
        return type(self).__name__


class NotFound(StoreError):
    pass


def get(key):
    raise NotFound(key)


def run():
    try:
        get("k")
    except StoreError as e:
        return e.report()
    return ""


run()
