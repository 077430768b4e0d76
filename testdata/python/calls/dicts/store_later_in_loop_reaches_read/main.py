def initial():
    return 0


def following():
    return 1


steps = {"next": initial}
for _ in range(3):
    steps["next"]()
    steps["next"] = following
