"""Central registry every plugin talks to."""


class Registry:
    """Holds plugins and dispatches events to them."""

    def __init__(self):
        self.plugins = {}

    def register(self, name, plugin):
        self.plugins[name] = plugin

    def get(self, name):
        return self.plugins[name]

    def dispatch(self, event):
        for plugin in self.plugins.values():
            if hasattr(plugin, "handle"):
                plugin.handle(event)

    def names(self):
        return sorted(self.plugins)


REGISTRY = Registry()
