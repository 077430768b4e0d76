def open_file(path):
    return "posix:" + path
