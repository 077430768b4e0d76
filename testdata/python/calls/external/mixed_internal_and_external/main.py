import re

WORD = re.compile(r"\w+")


def words(text):
    return WORD.findall(text)


def count(text):
    return len(words(text))


count("a b c")
