def load():
    return {}
