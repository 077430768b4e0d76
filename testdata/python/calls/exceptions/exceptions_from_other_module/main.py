from errors import NotAllowed


def guard(user):
    if user != "admin":
        raise NotAllowed(user)
    return True


def run():
    try:
        guard("bob")
    except NotAllowed as e:
        return e.message()
    return ""


run()
