from datetime import datetime


def stamp():
    return datetime.now().isoformat()


stamp()
