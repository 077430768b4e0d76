class Job:
    def fetch(self):
        return "fetch"

    def store(self):
        return "store"

    def steps(self):
        yield self.fetch
        yield self.store

    def run(self):
        return [step() for step in self.steps()]


Job().run()
