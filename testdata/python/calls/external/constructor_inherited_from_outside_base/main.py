import json
from collections import OrderedDict


class Plain(OrderedDict):
    pass


class OwnInit(OrderedDict):
    def __init__(self):
        super().__init__()


class Layered(Plain):
    pass


class Inside:
    def __init__(self):
        pass


class FromInside(Inside):
    pass


class Bare:
    pass


Plain()
OwnInit()
Layered()
FromInside()
Bare()
json.JSONDecoder()
