def transform(x):
    return -x
