class Base:
    def save(self):
        return "base"


class LoggingMixin:
    def save(self):
        self.log("saving")
        return super().save()

    def log(self, msg):
        return msg


class Model(LoggingMixin, Base):
    pass


def run():
    return Model().save()


run()
