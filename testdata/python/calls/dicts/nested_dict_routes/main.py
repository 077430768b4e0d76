def list_users():
    return []


def list_items():
    return []


ROUTES = {"api": {"users": list_users, "items": list_items}}


def run():
    return ROUTES["api"]["users"]()


run()
