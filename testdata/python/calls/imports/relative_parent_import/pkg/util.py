def helper():
    return "help"
