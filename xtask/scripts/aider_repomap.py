#!/usr/bin/env python3
"""aider's repository map for `cargo xtask bench localization`.

Runs in the venv the xtask makes (target/aider-venv, with aider-chat
installed) and calls aider's own `RepoMap.get_repo_map`, the way aider does
when no file is in the chat: every file of the repository is an "other"
file, no file is mentioned, and the identifiers are the ones the task
mentions.

Two modes:

  aider_repomap.py map ROOT BUDGET TASK [--keywords a,b,...]
      prints the map for one task (for looking at it by hand)

  aider_repomap.py batch IN.json OUT.json
      one library, every task and budget in one process (the tags are parsed
      once); IN.json is {"root", "budgets": [N...], "queries": [{"id", "row",
      "text", "keywords"}], "count_files": [PATH...]}; OUT.json gets every
      map with its exact token count, and the token counts of count_files
      (the xtask passes repo-agent's outputs so both sides are counted alike)

Offline token counting: aider counts with the main model's tokenizer
(litellm -> tiktoken, which downloads its BPE file on first use). The model
given to RepoMap here counts with tiktoken's o200k_base, the encoding of
gpt-4o and the one repo-agent counts with (tiktoken-rs); the BPE file is
seeded into a private TIKTOKEN_CACHE_DIR from --o200k FILE (the xtask passes
tiktoken-rs's copy from the cargo registry; tiktoken checks its SHA-256).
If that fails, tokens are approximated as len(text) / 4 and the output says
so. RepoMap.token_count itself estimates long texts from a sample of their
lines; that is aider's behaviour and is kept.

aider's tags cache (a diskcache) goes to --cache-dir instead of ROOT, so the
corpus directory is left as it was and repeated runs skip parsing.

aider's ranking iterates over sets of strings, so a map can change with
Python's hash seed; the xtask runs this with PYTHONHASHSEED=0, and so should
a `map` meant to reproduce one of its outputs.
"""

import argparse
import hashlib
import json
import os
import re
import shutil
import sys
import time

O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"

# Words that name no code: dropped from a task's words before they are given
# to aider as mentioned identifiers. The same list for every task.
STOP_WORDS = frozenset(
    """
    a about above after again against all also am an and any are as at be
    because been before being below between both but by can could did do does
    doing down during each even every few for from further get got had has
    have having he her here hers him his how however i if in into is it its
    itself just let like make me more most my myself need no nor not now of
    off on once one only or other our ours out over own please same she should
    so some such than that the their theirs them then there these they this
    those through to too under until up us use using very want was way we were
    what when where which while who whom why will with without would you your
    yours yourself into onto per via its it's i'm don't can't won't
    """.split()
)

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")


def identifiers(text):
    """The words of `text` that could name code: [A-Za-z_][A-Za-z0-9_]{2,},
    minus English stop words (compared case-insensitively)."""
    return {w for w in IDENT.findall(text) if w.lower() not in STOP_WORDS}


def keyword_identifiers(keywords):
    """For the keywords row: each keyword as given, and its words."""
    return set(keywords) | identifiers(" ".join(keywords))


class OfflineModel:
    """The part of aider's `Model` that RepoMap uses: `token_count`, as
    aider's `Model.token_count` computes it for a string (the length of the
    tokenizer's encoding), with tiktoken's o200k_base (gpt-4o's encoding)
    loaded offline, or len/4 when that encoding cannot be loaded."""

    name = "gpt-4o"

    def __init__(self, o200k_file, tiktoken_cache):
        self.encoding = None
        self.counter = "len(text)/4 (approximation: o200k_base could not be loaded)"
        try:
            os.makedirs(tiktoken_cache, exist_ok=True)
            os.environ["TIKTOKEN_CACHE_DIR"] = tiktoken_cache
            cached = os.path.join(tiktoken_cache, hashlib.sha1(O200K_URL.encode()).hexdigest())
            if o200k_file and os.path.isfile(o200k_file) and not os.path.isfile(cached):
                shutil.copyfile(o200k_file, cached)
            if os.path.isfile(cached):
                import tiktoken

                self.encoding = tiktoken.get_encoding("o200k_base")
                self.counter = f"tiktoken {tiktoken.__version__} o200k_base"
        except Exception as err:  # noqa: BLE001 - any failure means the fallback
            print(f"note: o200k_base unavailable ({err}); counting len/4", file=sys.stderr)
            self.encoding = None

    def token_count(self, text):
        if not isinstance(text, str):
            text = json.dumps(text)
        if self.encoding is None:
            return len(text) // 4
        return len(self.encoding.encode(text, disallowed_special=()))


def source_files(root):
    """Every file of the repository, as aider sees a checkout: hidden
    directories and __pycache__ left out."""
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "__pycache__")
        for name in sorted(filenames):
            if not name.endswith((".pyc", ".pyo")):
                files.append(os.path.join(dirpath, name))
    return files


def make_repo_map(root, budget, model, cache_dir):
    from aider.io import InputOutput
    from aider.repomap import RepoMap

    if cache_dir:
        os.makedirs(cache_dir, exist_ok=True)
        # RepoMap joins this to root; an absolute path replaces it.
        RepoMap.TAGS_CACHE_DIR = os.path.abspath(os.path.join(cache_dir, RepoMap.TAGS_CACHE_DIR))
    io = InputOutput(pretty=False, yes=True, fancy_input=False)
    return RepoMap(map_tokens=budget, root=root, main_model=model, io=io)


def get_map(repo_map, budget, files, idents):
    repo_map.max_map_tokens = budget
    return (
        repo_map.get_repo_map(
            chat_files=[],
            other_files=files,
            mentioned_fnames=set(),
            mentioned_idents=set(idents),
        )
        or ""
    )


def common_args(parser):
    parser.add_argument("--o200k", help="a local copy of o200k_base.tiktoken")
    parser.add_argument("--tiktoken-cache", default=os.path.join("target", "aider-venv", "tiktoken-cache"))
    parser.add_argument("--cache-dir", help="where aider's tags cache goes (default: inside ROOT)")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="mode", required=True)
    one = sub.add_parser("map", help="print the map for one task")
    one.add_argument("root")
    one.add_argument("budget", type=int)
    one.add_argument("task")
    one.add_argument("--keywords", help="comma-separated: use these instead of the task's words")
    common_args(one)
    batch = sub.add_parser("batch", help="every task and budget of one repository")
    batch.add_argument("input")
    batch.add_argument("output")
    common_args(batch)
    args = parser.parse_args()

    import aider

    model = OfflineModel(args.o200k, args.tiktoken_cache)
    if args.mode == "map":
        root = os.path.abspath(args.root)
        idents = (
            keyword_identifiers([k.strip() for k in args.keywords.split(",") if k.strip()])
            if args.keywords
            else identifiers(args.task)
        )
        repo_map = make_repo_map(root, args.budget, model, args.cache_dir)
        text = get_map(repo_map, args.budget, source_files(root), idents)
        print(f"# aider {aider.__version__}, {model.counter}, identifiers {sorted(idents)}", file=sys.stderr)
        sys.stdout.write(text)
        return

    with open(args.input, encoding="utf-8") as f:
        spec = json.load(f)
    root = os.path.abspath(spec["root"])
    files = source_files(root)
    budgets = spec["budgets"]
    # aider prints progress and notes on stdout; the results go to a file.
    sys.stdout = sys.stderr
    start = time.monotonic()
    repo_map = make_repo_map(root, max(budgets), model, args.cache_dir)
    results = []
    for query in spec["queries"]:
        if query["row"] == "keywords":
            idents = keyword_identifiers(query["keywords"])
        else:
            idents = identifiers(query["text"])
        for budget in budgets:
            t0 = time.monotonic()
            text = get_map(repo_map, budget, files, idents)
            results.append(
                {
                    "id": query["id"],
                    "row": query["row"],
                    "budget": budget,
                    "identifiers": sorted(idents),
                    "map": text,
                    "tokens": model.token_count(text),
                    "seconds": round(time.monotonic() - t0, 3),
                }
            )
    counts = {}
    for path in spec.get("count_files", []):
        with open(path, encoding="utf-8", errors="replace") as f:
            counts[path] = model.token_count(f.read())
    out = {
        "aider_version": aider.__version__,
        "token_counter": model.counter,
        "files": len(files),
        "seconds": round(time.monotonic() - start, 3),
        "results": results,
        "counts": counts,
    }
    with open(args.output, "w", encoding="utf-8") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
