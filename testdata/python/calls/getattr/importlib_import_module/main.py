import importlib


def run():
    plugin = importlib.import_module("plugins.alpha")
    return plugin.activate()


run()
