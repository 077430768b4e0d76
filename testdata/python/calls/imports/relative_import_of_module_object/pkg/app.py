from . import db


def start():
    return db.connect()
