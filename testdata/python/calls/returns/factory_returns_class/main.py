class Widget:
    def __init__(self, name):
        self.name = name

    def draw(self):
        return f"[{self.name}]"


def widget_class():
    return Widget


def run():
    widget = widget_class()("button")
    return widget.draw()


run()
