def work(x):
    if x < 0:
        raise ValueError(x)
    return x


def recover():
    return "recovered"


def commit():
    return "committed"


def cleanup():
    return "cleaned"


def run(x):
    try:
        work(x)
    except ValueError:
        recover()
    else:
        commit()
    finally:
        cleanup()


run(1)
run(-1)
