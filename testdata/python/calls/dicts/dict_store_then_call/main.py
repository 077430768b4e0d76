def build():
    return "built"


def run():
    registry = {}
    registry["build"] = build
    return registry["build"]()


run()
