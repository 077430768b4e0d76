from lib import fetch


def run():
    return fetch("url")


run()
