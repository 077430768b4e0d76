def greet():
    return "hi"


class Repeat:
    def __init__(self, times):
        self.left = times

    def __iter__(self):
        return self

    def __next__(self):
        if self.left == 0:
            raise StopIteration
        self.left -= 1
        return greet


for action in Repeat(2):
    action()
