class Circle:
    def area(self):
        return 3.14


class Square:
    def __init__(self, side):
        self.side = side

    def area(self):
        return self.side * self.side


def run():
    shapes = [Circle(), Square(2)]
    return sum(shape.area() for shape in shapes)


run()
