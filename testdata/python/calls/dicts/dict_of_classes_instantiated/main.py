class CsvReader:
    def __init__(self, path):
        self.path = path

    def read(self):
        return "csv"


class JsonReader:
    def __init__(self, path):
        self.path = path

    def read(self):
        return "json"


READERS = {"csv": CsvReader, "json": JsonReader}


def open_file(path):
    ext = path.rsplit(".", 1)[-1]
    return READERS[ext](path).read()


open_file("a.csv")
open_file("b.json")
