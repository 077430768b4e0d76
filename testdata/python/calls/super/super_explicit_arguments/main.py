class Model:
    def save(self):
        return "saved"


class User(Model):
    def save(self):
        return super(User, self).save()


def run():
    return User().save()


run()
