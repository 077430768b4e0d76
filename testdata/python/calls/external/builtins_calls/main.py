def summarize(values):
    count = len(values)
    ordered = sorted(values)
    if isinstance(values, list):
        print(count, ordered[0])
    return max(values)


summarize([3, 1, 2])
