class Dog:
    def speak(self):
        return "woof"


class Cat:
    def speak(self):
        return "meow"


def run(kind):
    if kind == "dog":
        pet = Dog()
    else:
        pet = Cat()
    return pet.speak()


run("dog")
run("cat")
