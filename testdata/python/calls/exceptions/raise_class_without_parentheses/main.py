class Timeout(Exception):
    def __init__(self):
        super().__init__("timed out")


def wait():
    raise Timeout


def run():
    try:
        wait()
    except Timeout:
        return None


run()
