def compute(x):
    return x * x
