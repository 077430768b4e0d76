import functools


def expensive():
    return 42


class Report:
    @functools.cached_property
    def value(self):
        return expensive()


def run():
    report = Report()
    return report.value + report.value


run()
