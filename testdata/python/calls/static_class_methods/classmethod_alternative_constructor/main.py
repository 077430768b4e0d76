class Point:
    def __init__(self, x, y):
        self.x = x
        self.y = y

    @classmethod
    def from_dict(cls, d):
        return cls(d["x"], d["y"])


def run():
    return Point.from_dict({"x": 1, "y": 2})


run()
