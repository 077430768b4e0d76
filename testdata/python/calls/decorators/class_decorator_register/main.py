REGISTRY = {}


def register(cls):
    REGISTRY[cls.__name__] = cls
    return cls


@register
class Exporter:
    def export(self):
        return "exported"


def run_all():
    return [cls().export() for cls in REGISTRY.values()]


run_all()
