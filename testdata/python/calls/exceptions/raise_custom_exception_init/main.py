class AppError(Exception):
    def __init__(self, message, code):
        super().__init__(message)
        self.code = code


def load(path):
    if not path:
        raise AppError("empty path", 2)
    return path


def run():
    try:
        load("")
    except AppError as err:
        return err.code
    return 0


run()
