def handler():
    return "handled"


def run(code):
    return eval(code)


eval("handler()")
run("1 + 1")
