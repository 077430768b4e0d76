class Reader:
    def read(self):
        return "r"


class Writer:
    def write(self):
        return "w"


class File(Reader, Writer):
    pass


def run():
    f = File()
    return f.write()


run()
