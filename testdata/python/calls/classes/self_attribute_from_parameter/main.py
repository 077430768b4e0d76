class Mailer:
    def send(self, to):
        return to


class Notifier:
    def __init__(self, mailer):
        self.mailer = mailer

    def notify(self, user):
        return self.mailer.send(user)


def run():
    return Notifier(Mailer()).notify("ann")


run()
