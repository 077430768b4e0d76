def connect():
    return "conn"
