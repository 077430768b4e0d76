class ConfigError(Exception):
    def __init__(self, key):
        super().__init__(f"bad key {key}")
        self.key = key


def read(config, key):
    try:
        return config[key]
    except KeyError as err:
        raise ConfigError(key) from err


def run():
    try:
        read({}, "a")
    except ConfigError as e:
        return e.key
    return None


run()
