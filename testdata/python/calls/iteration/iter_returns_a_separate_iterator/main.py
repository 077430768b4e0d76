def parse(line):
    return line.split()


class Cursor:
    def __init__(self, rows):
        self.rows = rows
        self.at = 0

    def __next__(self):
        if self.at >= len(self.rows):
            raise StopIteration
        self.at += 1
        return parse


class Table:
    def __init__(self):
        self.rows = ["a b", "c d"]

    def __iter__(self):
        return Cursor(self.rows)


def read_all():
    for handler in Table():
        handler("x y")
