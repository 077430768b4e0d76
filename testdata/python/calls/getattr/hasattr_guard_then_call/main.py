class Resource:
    def close(self):
        return "closed"


def shutdown(obj):
    if hasattr(obj, "close"):
        obj.close()


shutdown(Resource())
shutdown(object())
