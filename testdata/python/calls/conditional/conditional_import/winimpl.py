def open_file(path):
    return "win:" + path
