class Connection:
    def __init__(self, url):
        self.url = url

    def close(self):
        return self.url


def connect(url):
    return Connection(url)


def run():
    return connect("db://").close()


run()
