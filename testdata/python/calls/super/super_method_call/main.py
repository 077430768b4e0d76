class Model:
    def save(self):
        return "saved"


class User(Model):
    def save(self):
        self.validate()
        return super().save()

    def validate(self):
        return True


def run():
    return User().save()


run()
