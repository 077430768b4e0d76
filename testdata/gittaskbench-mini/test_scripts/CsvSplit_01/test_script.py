"""Grades CsvSplit_01 (multi_output): one CSV per region, compared as a set
of tables with the files of the ground-truth directory."""

import argparse
import csv
import json
import os
from datetime import datetime


def write_result(path, process, result, comments):
    """Appends the verdict as one JSON line, as every GitTaskBench test script does."""
    data = {
        "Process": process,
        "Result": result,
        "TimePoint": datetime.now().isoformat(timespec="seconds"),
        "comments": comments,
    }
    if not path:
        print(json.dumps(data))
        return
    directory = os.path.dirname(path)
    if directory:
        os.makedirs(directory, exist_ok=True)
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(data, ensure_ascii=False) + "\n")


def table(path):
    with open(path, newline="", encoding="utf-8") as f:
        rows = [tuple(cell.strip() for cell in row) for row in csv.reader(f) if row]
    return rows[0], tuple(rows[1:])


def candidates(directory):
    found = []
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if os.path.isdir(path) and name.startswith("output"):
            found.extend(os.path.join(path, n) for n in sorted(os.listdir(path)))
        elif name.startswith("output"):
            found.append(path)
    return [p for p in found if os.path.isfile(p) and not p.endswith(".py") and os.path.getsize(p) > 0]


def evaluate(output, groundtruth):
    if not os.path.isdir(output):
        return False, False, f"{output} is not a directory of outputs"
    files = candidates(output)
    if not files:
        return False, False, "no output files"
    try:
        got = sorted(table(p) for p in files)
        want = sorted(table(os.path.join(groundtruth, n)) for n in sorted(os.listdir(groundtruth)))
    except (OSError, UnicodeDecodeError, csv.Error, IndexError) as e:
        return False, False, f"cannot read the CSV files: {e}"
    if got == want:
        return True, True, f"{len(want)} region files match"
    return True, False, f"{len(got)} file(s) do not match the {len(want)} expected region files"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Grade CsvSplit_01")
    parser.add_argument("--output", required=True)
    parser.add_argument("--result")
    parser.add_argument("--groundtruth", required=True)
    args = parser.parse_args()
    process, result, comments = evaluate(args.output, args.groundtruth)
    write_result(args.result, process, result, comments)
