class Plugin:
    registry = []

    @classmethod
    def register(cls, plugin_cls):
        cls.registry.append(plugin_cls)
        return plugin_cls

    @classmethod
    def instantiate_all(cls):
        return [p() for p in cls.registry]


class Alpha(Plugin):
    def __init__(self):
        self.name = "alpha"


Plugin.register(Alpha)
Plugin.instantiate_all()
