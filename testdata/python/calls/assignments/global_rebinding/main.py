def default_sink(msg):
    return msg


def file_sink(msg):
    return msg.upper()


SINK = default_sink


def configure():
    global SINK
    SINK = file_sink


def emit(msg):
    return SINK(msg)


emit("before")
configure()
emit("after")
