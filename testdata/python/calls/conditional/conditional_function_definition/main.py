import os


def verbose():
    return "verbose"


def quiet():
    return "quiet"


if os.environ.get("DEBUG"):
    def report():
        return verbose()
else:
    def report():
        return quiet()


def run():
    return report()


run()
