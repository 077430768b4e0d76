import json
import os


def config_path(name):
    return os.path.join("etc", name)


def dump(data):
    return json.dumps(data, sort_keys=True)


def run():
    return dump({"path": config_path("app.toml")})


run()
