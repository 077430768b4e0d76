class Button:
    def __init__(self, on_click):
        self.on_click = on_click

    def click(self):
        return self.on_click()


def save():
    return "saved"


def run():
    button = Button(save)
    return button.click()


run()
