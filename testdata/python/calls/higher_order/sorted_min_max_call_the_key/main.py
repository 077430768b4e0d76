def by_length(word):
    return len(word)


def by_last(word):
    return word[-1]


def by_first(word):
    return word[0]


def pick(words):
    ordered = sorted(words, key=by_length)
    shortest = min(words, key=by_last)
    longest = max("ab", "cd", key=by_first)
    return ordered, shortest, longest
