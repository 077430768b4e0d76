class Engine:
    def __init__(self):
        self.on = False

    def start(self):
        self.on = True
        return self.on
