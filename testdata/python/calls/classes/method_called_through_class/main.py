class Greeter:
    def greet(self, name):
        return "hi " + name


def run():
    g = Greeter()
    return Greeter.greet(g, "bob")


run()
