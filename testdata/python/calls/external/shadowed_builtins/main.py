def open(path):
    return f"fake:{path}"


def len(value):
    return 0


def run():
    handle = open("data.txt")
    return len(handle)


run()
