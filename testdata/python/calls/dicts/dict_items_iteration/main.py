def build_docs():
    return "docs"


def build_wheel():
    return "wheel"


def run():
    steps = {"docs": build_docs, "wheel": build_wheel}
    out = {}
    for name, step in steps.items():
        out[name] = step()
    return out


run()
