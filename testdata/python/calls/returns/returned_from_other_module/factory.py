def parse_csv(text):
    return text.split(",")


def make_parser():
    return parse_csv
