from pkg import sub


def run():
    return sub.compute()


run()
