class Handler:
    def __init__(self, kind):
        self.kind = kind

    def handle(self):
        return self.kind
