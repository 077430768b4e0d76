# numpy may be missing: stats() only runs when the import worked.
try:
    import numpy as np
except ImportError:
    np = None


def stats(values):
    arr = np.array(values)
    return np.mean(arr)


def run():
    if np is None:
        return None
    return stats([1, 2, 3])


run()
