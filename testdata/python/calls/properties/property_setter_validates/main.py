def validate(value):
    if value < -273:
        raise ValueError(value)
    return value


class Thermometer:
    def __init__(self):
        self._celsius = 0

    @property
    def celsius(self):
        return self._celsius

    @celsius.setter
    def celsius(self, value):
        self._celsius = validate(value)


def run():
    t = Thermometer()
    t.celsius = 20


run()
