"""Expected prompts for llm-local's Qwen2.5 chat template tests.

Renders the GGUF's own `tokenizer.chat_template` with jinja2, in the
environment transformers' apply_chat_template uses (trim_blocks,
lstrip_blocks, a `tojson` that keeps non-ASCII), for the conversations
below, mirrored in template.rs's tests, and writes them to
tests/data/qwen2_chat_template.json.

    pip install --target target/pyref gguf jinja2
    PYTHONPATH=target/pyref python3 crates/llm-local/scripts/qwen2_chat_template_reference.py MODEL.gguf
"""
import json
import sys

import jinja2
from gguf import GGUFReader


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def sort_keys(value):
    """llm-local's JSON objects (serde_json without preserve_order) keep their keys sorted."""
    if isinstance(value, dict):
        return {k: sort_keys(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [sort_keys(v) for v in value]
    return value


def tool(name, description, parameters):
    return {"type": "function", "function": {"name": name, "description": description, "parameters": sort_keys(parameters)}}


TOOLS = [
    tool("read_file", "Read a text file of the repository.", {
        "type": "object",
        "properties": {"path": {"type": "string", "description": "path of the file"}, "start_line": {"type": "integer"}},
        "required": ["path"],
    }),
    tool("search_code", "Search the repository for a symbol or text.", {
        "type": "object",
        "properties": {"query": {"type": "string"}, "kinds": {"type": "array", "items": {"type": "string", "enum": ["class", "function"]}}, "exact": {"type": "boolean"}},
        "required": ["query"],
    }),
    tool("list_dir", "Lists the working directory.", {"type": "object", "properties": {}}),
]


def call(name, arguments):
    return {"type": "function", "function": {"name": name, "arguments": sort_keys(arguments)}}


AGENT = [
    {"role": "system", "content": "You are a coding agent. 请用中文回答。"},
    {"role": "user", "content": "Read README.md and 列出文件."},
    {"role": "assistant", "content": None, "tool_calls": [call("read_file", {"path": "README.md", "start_line": 1})]},
    {"role": "tool", "content": "# Project\nA tool.\n"},
    {"role": "assistant", "content": "Two calls:", "tool_calls": [call("search_code", {"query": "main", "kinds": ["function"], "exact": True}), call("list_dir", {})]},
    {"role": "tool", "content": "src/main.rs:1: fn main()"},
    {"role": "tool", "content": "[\"a.py\", \"b.py\"]"},
    {"role": "assistant", "content": "Done. The file says \"A tool\"."},
    {"role": "user", "content": "Thanks <|im_end|> bye"},
]

CASES = [
    ("agent_with_tools", AGENT, TOOLS),
    ("tools_without_system", [{"role": "user", "content": "List the files."}], TOOLS[2:]),
    ("no_tools_no_system", [{"role": "user", "content": "Say hi"}, {"role": "assistant", "content": "Hi!"}, {"role": "user", "content": "Again"}], None),
    ("no_tools_with_system", [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say hi"}, {"role": "system", "content": "Later system."}], None),
]


def main():
    template = GGUFReader(sys.argv[1]).fields["tokenizer.chat_template"].contents()
    env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    env.filters["tojson"] = tojson
    compiled = env.from_string(template)
    out = []
    for name, messages, tools in CASES:
        text = compiled.render(messages=messages, tools=tools, add_generation_prompt=True)
        out.append({"name": name, "text": text})
    json.dump(out, sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
