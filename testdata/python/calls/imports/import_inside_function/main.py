def run():
    from tools import fmt

    return fmt("x")


run()
