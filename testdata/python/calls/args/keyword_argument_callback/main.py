def retry(action, *, on_error):
    try:
        return action()
    except ValueError as exc:
        return on_error(exc)


def fetch():
    raise ValueError("offline")


def log_error(exc):
    return str(exc)


def run():
    return retry(action=fetch, on_error=log_error)


run()
