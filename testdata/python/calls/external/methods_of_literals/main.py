HANDLERS = {"a": print}


def render(parts):
    line = ", ".join(parts)
    words = "a b c".split(" ")
    handler = HANDLERS.get("a")
    handler(line)
    return f"{line}!".upper(), words


def shadowed(str):
    # A parameter named `str` changes nothing: the literal is still a str.
    return "x".strip()


render(["x"])
shadowed(1)
