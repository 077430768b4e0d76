class A:
    def name(self):
        return "A"


class B(A):
    def name(self):
        return "B"


class C(B):
    def name(self):
        return super(B, self).name()


def run():
    return C().name()


run()
