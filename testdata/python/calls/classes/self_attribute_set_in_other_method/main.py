class Client:
    def get(self, path):
        return path


class Service:
    def __init__(self):
        self.client = None

    def connect(self):
        self.client = Client()

    def fetch(self):
        return self.client.get("/items")


def run():
    service = Service()
    service.connect()
    return service.fetch()


run()
