def tidy(text):
    return text.strip()
