"""Grades WordCount_01: the top three words with counts, as CSV."""

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


def read_rows(path):
    with open(path, newline="", encoding="utf-8") as f:
        return [[cell.strip() for cell in row] for row in csv.reader(f) if row]


def evaluate(output, groundtruth):
    if not os.path.isfile(output) or os.path.getsize(output) == 0:
        return False, False, f"output {output} is missing or empty"
    try:
        rows = read_rows(output)
        expected = read_rows(groundtruth)
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        return False, False, f"cannot read the CSV: {e}"
    if not rows or [c.lower() for c in rows[0]] != ["word", "count"]:
        return False, False, f"expected the header word,count, got {rows[:1]}"
    got = [(r[0].lower(), r[1]) for r in rows[1:] if len(r) >= 2]
    want = [(r[0], r[1]) for r in expected[1:]]
    if got == want:
        return True, True, f"all {len(want)} rows match"
    return True, False, f"rows {got} differ from the expected {want}"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Grade WordCount_01")
    parser.add_argument("--output", required=True)
    parser.add_argument("--result")
    parser.add_argument("--groundtruth", required=True)
    args = parser.parse_args()
    process, result, comments = evaluate(args.output, args.groundtruth)
    write_result(args.result, process, result, comments)
