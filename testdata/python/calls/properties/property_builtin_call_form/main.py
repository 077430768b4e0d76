class Account:
    def __init__(self):
        self._owner = "nobody"

    def get_owner(self):
        return self._owner

    def set_owner(self, value):
        self._owner = value.strip()

    owner = property(get_owner, set_owner)


def run():
    account = Account()
    account.owner = " ann "
    return account.owner


run()
