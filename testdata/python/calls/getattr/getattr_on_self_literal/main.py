class Job:
    def step(self):
        return "step"

    def run(self):
        return getattr(self, "step")()


Job().run()
