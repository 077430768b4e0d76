class Reader:
    def open(self):
        return "reader"


class Writer:
    def open(self):
        return "writer"


class File(Reader, Writer):
    pass


def run():
    return File().open()


run()
