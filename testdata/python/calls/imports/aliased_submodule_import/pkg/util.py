def slug(text):
    return text.lower().replace(" ", "-")
