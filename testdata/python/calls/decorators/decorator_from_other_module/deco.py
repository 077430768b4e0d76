def cached(func):
    store = {}

    def lookup(key):
        if key not in store:
            store[key] = func(key)
        return store[key]

    return lookup
