def encode(x):
    return str(x)


def decode(x):
    return int(x)


def run():
    codec = dict(encode=encode, decode=decode)
    return codec["encode"](1)


run()
