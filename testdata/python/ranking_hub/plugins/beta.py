from registry import Registry, REGISTRY


class BetaPlugin:
    def handle(self, event):
        return event


def setup(registry: Registry):
    registry.register("beta", BetaPlugin())
    registry.get("beta")
    registry.dispatch("ready")
    registry.names()
