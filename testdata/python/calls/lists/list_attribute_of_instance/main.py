class Pipeline:
    def __init__(self):
        self.stages = []

    def add(self, stage):
        self.stages.append(stage)
        return self

    def run(self, value):
        for stage in self.stages:
            value = stage(value)
        return value


def inc(x):
    return x + 1


def dbl(x):
    return x * 2


def main_flow():
    return Pipeline().add(inc).add(dbl).run(1)


main_flow()
