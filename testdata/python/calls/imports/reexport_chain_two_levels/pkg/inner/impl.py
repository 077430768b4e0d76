def render():
    return "html"
