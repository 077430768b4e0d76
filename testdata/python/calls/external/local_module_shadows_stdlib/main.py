import json


def run():
    return json.dumps({"a": 1})


run()
