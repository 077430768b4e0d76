def clean(text):
    return text.strip()


def tokenize(text):
    return text.split()


PIPELINE = [clean, tokenize]


def run():
    return PIPELINE[0](" a ")


run()
