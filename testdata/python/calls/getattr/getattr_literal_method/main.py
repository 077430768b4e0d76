class Store:
    def save(self):
        return "saved"


def run():
    store = Store()
    return getattr(store, "save")()


run()
