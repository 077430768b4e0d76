class Rect:
    def __init__(self, w, h):
        self.w = w
        self.h = h

    @property
    def area(self):
        return self.w * self.h

    def describe(self):
        return f"area={self.area}"


def run():
    return Rect(2, 3).describe()


run()
