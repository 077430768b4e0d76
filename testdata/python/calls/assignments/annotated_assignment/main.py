from typing import Callable


def greet() -> str:
    return "hello"


def run():
    handler: Callable[[], str] = greet
    return handler()


run()
