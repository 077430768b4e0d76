def one():
    return 1


def text_one():
    return "1"


def hex_two():
    return 2


handlers = {1: one, "1": text_one, 0x2: hex_two}
handlers[1]()
handlers["1"]
handlers[2]()
pair = (one, text_one)
pair[0]()
