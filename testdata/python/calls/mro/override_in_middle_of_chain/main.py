class A:
    def greet(self):
        return "A"


class B(A):
    def greet(self):
        return "B"


class C(B):
    pass


def run():
    return C().greet()


run()
