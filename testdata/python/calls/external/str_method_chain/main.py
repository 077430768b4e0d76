def normalize(value):
    s = str(value)
    s = s.strip()
    s = s.replace("-", "_")
    return s.upper()


normalize(" a-b ")
