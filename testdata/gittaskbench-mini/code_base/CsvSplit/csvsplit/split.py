"""One CSV file per value of a column."""

import csv
import os


def split_by(path, column, out_dir, prefix="part_"):
    """Writes `prefix01.csv`, `prefix02.csv`, ... into `out_dir`, one per
    distinct value of `column` in order of first appearance, each with the
    header. Returns the paths written."""
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.reader(f)
        header = next(reader)
        index = header.index(column)
        groups = {}
        for row in reader:
            groups.setdefault(row[index], []).append(row)
    os.makedirs(out_dir, exist_ok=True)
    written = []
    for number, rows in enumerate(groups.values(), start=1):
        target = os.path.join(out_dir, f"{prefix}{number:02d}.csv")
        with open(target, "w", newline="", encoding="utf-8") as f:
            writer = csv.writer(f)
            writer.writerow(header)
            writer.writerows(rows)
        written.append(target)
    return written
