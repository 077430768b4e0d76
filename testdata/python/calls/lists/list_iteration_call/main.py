def clean(text):
    return text.strip()


def lower(text):
    return text.lower()


def run(text):
    for step in [clean, lower]:
        text = step(text)
    return text


run(" A ")
