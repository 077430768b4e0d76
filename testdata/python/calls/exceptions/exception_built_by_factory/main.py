class HttpError(Exception):
    def __init__(self, status):
        super().__init__(status)
        self.status = status

    def text(self):
        return f"HTTP {self.status}"


def not_found():
    return HttpError(404)


def handle():
    raise not_found()


def run():
    try:
        handle()
    except HttpError as e:
        return e.text()
    return ""


run()
