def make_printer(label):
    def printer():
        return label
    return printer


def run(labels):
    for printer in map(make_printer, labels):
        printer()
