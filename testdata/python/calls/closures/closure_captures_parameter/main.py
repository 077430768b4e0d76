def notify():
    return "notified"


def make_job(callback):
    def job():
        return callback()

    return job


def run():
    return make_job(notify)()


run()
