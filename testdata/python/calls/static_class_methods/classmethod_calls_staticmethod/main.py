class Parser:
    @staticmethod
    def check(text):
        return bool(text)

    @classmethod
    def parse(cls, text):
        if cls.check(text):
            return text.split()
        return []


def run():
    return Parser.parse("a b")


run()
