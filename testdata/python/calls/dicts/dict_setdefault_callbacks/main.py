def audit():
    return "audit"


def notify():
    return "notify"


def run():
    hooks = {}
    hooks.setdefault("save", []).append(audit)
    hooks.setdefault("save", []).append(notify)
    return [hook() for hook in hooks["save"]]


run()
