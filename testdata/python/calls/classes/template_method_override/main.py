class Task:
    def run(self):
        self.setup()
        return self.step()

    def setup(self):
        return None

    def step(self):
        raise NotImplementedError


class Upload(Task):
    def step(self):
        return "uploaded"


def main_task():
    return Upload().run()


main_task()
