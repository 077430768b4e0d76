from plugins import alpha, beta, gamma, delta
from registry import REGISTRY


def main():
    for plugin in (alpha, beta, gamma, delta):
        plugin.setup(REGISTRY)
    REGISTRY.dispatch("start")


if __name__ == "__main__":
    main()
