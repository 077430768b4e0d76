class ParseError(Exception):
    def describe(self):
        return "parse error: " + str(self)


def parse(text):
    raise ParseError(text)


def run():
    try:
        parse("x")
    except ParseError as e:
        return e.describe()
    return ""


run()
