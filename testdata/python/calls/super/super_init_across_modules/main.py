from base import Handler


class JsonHandler(Handler):
    def __init__(self):
        super().__init__("json")


def run():
    return JsonHandler().handle()


run()
