class A:
    def ping(self):
        return "pong"


class B(A):
    pass


class C(B):
    pass


class D(C):
    pass


def run():
    return D().ping()


run()
