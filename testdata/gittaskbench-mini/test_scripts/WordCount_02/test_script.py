"""Grades WordCount_02: the number of distinct words, which this script knows."""

import argparse
import json
import os
from datetime import datetime

EXPECTED = 8


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


def evaluate(output):
    if not os.path.isfile(output) or os.path.getsize(output) == 0:
        return False, False, f"output {output} is missing or empty"
    try:
        with open(output, encoding="utf-8") as f:
            text = f.read().strip()
        value = int(text)
    except (OSError, UnicodeDecodeError) as e:
        return False, False, f"cannot read the output: {e}"
    except ValueError:
        return False, False, f"the output is not a number: {text[:80]!r}"
    if value == EXPECTED:
        return True, True, f"{value} distinct words"
    return True, False, f"got {value} distinct words, expected {EXPECTED}"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Grade WordCount_02")
    parser.add_argument("--output", required=True)
    parser.add_argument("--result")
    args = parser.parse_args()
    process, result, comments = evaluate(args.output)
    write_result(args.result, process, result, comments)
