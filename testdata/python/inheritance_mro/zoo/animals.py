from .base import Animal, Walker, Swimmer


class Dog(Walker):
    def sound(self):
        return "woof"

    def speak(self):
        return super().speak() + "!"


class Duck(Walker, Swimmer):
    """Diamond: Duck -> Walker -> Swimmer -> Animal."""

    def describe(self):
        return self.move() + self.sound()


class Marker:
    """No __init__ anywhere: instantiation targets the class."""


def make_all():
    dog = Dog("rex")
    duck = Duck.create("donald")
    dog.speak()
    duck.describe()
    Animal.kingdom()
    return Marker()
