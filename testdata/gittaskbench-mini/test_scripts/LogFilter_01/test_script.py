"""Grades LogFilter_01: the log lines with the keyword, in order."""

import argparse
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


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\r\n") for line in f if line.strip()]


def evaluate(output, groundtruth, keyword):
    if not os.path.isfile(output) or os.path.getsize(output) == 0:
        return False, False, f"output {output} is missing or empty"
    try:
        got = read_lines(output)
        want = read_lines(groundtruth)
    except (OSError, UnicodeDecodeError) as e:
        return False, False, f"cannot read the text: {e}"
    stray = [line for line in got if keyword not in line]
    if stray:
        return True, False, f"{len(stray)} line(s) without {keyword!r}, e.g. {stray[0]!r}"
    if got != want:
        return True, False, f"got {len(got)} line(s), expected the {len(want)} {keyword} line(s) in order"
    return True, True, f"all {len(want)} {keyword} lines, in order"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Grade LogFilter_01")
    parser.add_argument("--output", required=True)
    parser.add_argument("--result")
    parser.add_argument("--groundtruth", required=True)
    parser.add_argument("--keyword", required=True)
    args = parser.parse_args()
    process, result, comments = evaluate(args.output, args.groundtruth, args.keyword)
    write_result(args.result, process, result, comments)
