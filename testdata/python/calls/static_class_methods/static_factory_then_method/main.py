class Settings:
    def __init__(self, path):
        self.path = path

    @staticmethod
    def default():
        return Settings("settings.toml")

    def load(self):
        return self.path


def run():
    return Settings.default().load()


run()
