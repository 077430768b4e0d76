def fmt(value):
    return f"<{value}>"
