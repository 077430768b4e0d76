class CheckError(Exception):
    def hint(self):
        return "generic"


class DiskFull(CheckError):
    def hint(self):
        return "free some space"


def check():
    raise DiskFull()


def run():
    try:
        check()
    except CheckError as e:
        return e.hint()
    return ""


run()
