class Pipeline:
    def __init__(self):
        self.step = self.parse

    def parse(self):
        return "parsed"

    def validate(self):
        return "valid"

    def advance(self):
        self.step = self.validate

    def run(self):
        return self.step()


p = Pipeline()
p.run()
p.advance()
p.run()
