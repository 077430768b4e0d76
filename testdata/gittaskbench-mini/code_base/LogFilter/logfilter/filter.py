"""Reading, filtering and saving log lines."""


def read_log(path):
    """The lines of a log file, without line ends."""
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def by_level(lines, level):
    """Lines whose third field (the level) is `level`."""
    return [line for line in lines if len(line.split()) > 2 and line.split()[2] == level]


def by_keyword(lines, keyword):
    """Lines that contain `keyword` anywhere."""
    return [line for line in lines if keyword in line]


def save_lines(lines, path):
    """Writes one line per entry."""
    with open(path, "w", encoding="utf-8") as f:
        for line in lines:
            f.write(line + "\n")
