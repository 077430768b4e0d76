class Store:
    def get(self, key):
        return key


def run():
    store = Store()
    getter = lambda k: store.get(k)
    return getter("a")


run()
