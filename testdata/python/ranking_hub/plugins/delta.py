from registry import Registry, REGISTRY


class DeltaPlugin:
    def handle(self, event):
        return event


def setup(registry: Registry):
    registry.register("delta", DeltaPlugin())
    registry.get("delta")
    registry.dispatch("ready")
    registry.names()
