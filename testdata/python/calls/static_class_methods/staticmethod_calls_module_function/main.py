def clamp(value, low, high):
    return max(low, min(value, high))


class Color:
    @staticmethod
    def channel(value):
        return clamp(value, 0, 255)


def run():
    return Color.channel(300)


run()
