def to_json(data):
    return "json"


def to_xml(data):
    return "xml"


def serializer(kind):
    if kind == "json":
        return to_json
    return to_xml


def run():
    return serializer("json")({}) + serializer("xml")({})


run()
