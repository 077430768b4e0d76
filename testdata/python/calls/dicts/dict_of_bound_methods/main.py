class Server:
    def __init__(self):
        self.routes = {"GET": self.on_get, "POST": self.on_post}

    def on_get(self):
        return "got"

    def on_post(self):
        return "posted"

    def handle(self, verb):
        return self.routes[verb]()


def run():
    server = Server()
    return server.handle("GET") + server.handle("POST")


run()
