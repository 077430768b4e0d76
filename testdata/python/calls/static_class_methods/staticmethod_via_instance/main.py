class Util:
    @staticmethod
    def slug(text):
        return text.lower()


def run():
    util = Util()
    return util.slug("Hello")


run()
