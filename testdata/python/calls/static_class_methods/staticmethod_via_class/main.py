class Util:
    @staticmethod
    def slug(text):
        return text.lower()


def run():
    return Util.slug("Hello")


run()
