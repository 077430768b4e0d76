class Plugin:
    def setup(self):
        return "setup"


def noop():
    return None


def run():
    plugin = Plugin()
    getattr(plugin, "setup", noop)()
    getattr(plugin, "teardown", noop)()


run()
