class Service:
    def handler(self):
        return self.process

    def process(self):
        return "done"


def run():
    return Service().handler()()


run()
