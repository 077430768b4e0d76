class Document:
    def __init__(self, text):
        self.text = text

    def validate(self):
        return bool(self.text)

    def save(self):
        if self.validate():
            return self.serialize()
        return None

    def serialize(self):
        return self.text.encode()


def run():
    return Document("hi").save()


run()
