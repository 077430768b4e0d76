class Scheduler:
    def __init__(self):
        self.jobs = []

    def add(self, job):
        self.jobs.append(job)

    def run_all(self):
        return [job() for job in self.jobs]


def backup():
    return "backup"


def cleanup():
    return "cleanup"


def run():
    scheduler = Scheduler()
    scheduler.add(backup)
    scheduler.add(cleanup)
    return scheduler.run_all()


run()
