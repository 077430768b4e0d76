class Logger:
    def __init__(self, prefix):
        self.prefix = prefix

    def write(self, msg):
        return self.prefix + msg


DEFAULT = Logger("> ")


def log(msg):
    return DEFAULT.write(msg)


log("hello")
