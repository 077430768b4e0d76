class Outer:
    class Inner:
        def ping(self):
            return "pong"

    def make(self):
        return self.Inner().ping()


def run():
    return Outer().make()


run()
