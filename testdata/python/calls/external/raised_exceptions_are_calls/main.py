import errno


class ConfigError(Exception):
    pass


def load(path):
    if not path:
        raise ValueError("no path")
    if path.startswith("/"):
        raise ConfigError(path)
    try:
        return open(path)
    except OSError as error:
        if error.errno == errno.ENOENT:
            raise
        raise error


load("settings.ini")
