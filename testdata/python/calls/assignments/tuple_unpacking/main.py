def parse(text):
    return text.split()


def render(tokens):
    return " ".join(tokens)


def run():
    p, r = parse, render
    return r(p("a b c"))


run()
