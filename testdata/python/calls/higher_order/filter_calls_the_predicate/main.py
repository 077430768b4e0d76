def is_even(n):
    return n % 2 == 0


class Rule:
    def matches(self, n):
        return n > 1


def keep(xs, rule):
    evens = filter(is_even, xs)
    return [n for n in filter(rule.matches, evens)]


keep([1, 2, 3], Rule())
