class Animal:
    """Base of all animals."""

    def __init__(self, name):
        self.name = name

    def speak(self):
        return self.sound()

    def sound(self):
        return "..."

    @classmethod
    def create(cls, name):
        return cls(name)

    @staticmethod
    def kingdom():
        return "animalia"


class Walker(Animal):
    def move(self):
        return "walk"


class Swimmer(Animal):
    def move(self):
        return "swim"

    def sound(self):
        return "blub"
