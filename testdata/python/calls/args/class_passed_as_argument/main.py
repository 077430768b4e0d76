class JsonCodec:
    def __init__(self, indent):
        self.indent = indent

    def encode(self, value):
        return str(value)


def build(codec_cls):
    codec = codec_cls(2)
    return codec.encode({"a": 1})


def run():
    return build(JsonCodec)


run()
