from registry import Registry, REGISTRY


class AlphaPlugin:
    def handle(self, event):
        return event


def setup(registry: Registry):
    registry.register("alpha", AlphaPlugin())
    registry.get("alpha")
    registry.dispatch("ready")
    registry.names()
