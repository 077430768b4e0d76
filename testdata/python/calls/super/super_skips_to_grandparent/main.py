class Grand:
    def describe(self):
        return "grand"


class Parent(Grand):
    pass


class Child(Parent):
    def describe(self):
        return "child of " + super().describe()


def run():
    return Child().describe()


run()
