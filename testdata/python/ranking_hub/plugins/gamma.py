from registry import Registry, REGISTRY


class GammaPlugin:
    def handle(self, event):
        return event


def setup(registry: Registry):
    registry.register("gamma", GammaPlugin())
    registry.get("gamma")
    registry.dispatch("ready")
    registry.names()
