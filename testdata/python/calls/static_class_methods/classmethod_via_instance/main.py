class Config:
    def __init__(self, data):
        self.data = data

    @classmethod
    def empty(cls):
        return cls({})

    def reset(self):
        return self.empty()


def run():
    return Config({"a": 1}).reset()


run()
