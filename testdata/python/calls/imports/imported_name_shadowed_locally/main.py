from lib import transform


def run():
    def transform(x):
        return x

    return transform(1)


run()
