"""Expected ids for llm-local's Qwen2 tokenizer tests.

Builds a Hugging Face `tokenizers` tokenizer from a Qwen2 GGUF's vocabulary
and merges with the configuration transformers' Qwen2Converter gives every
Qwen2 tokenizer.json (NFC, the Qwen2 split, byte-level, BPE), adds the
GGUF's user-defined tokens (type 4: <tool_call>, </tool_call>) as added
tokens, and writes, for a fixed corpus, the split pieces and the ids to
tests/data/qwen2_tokenizer.json. Control tokens (<|im_end|> ...) are not
added: llm-local encodes text that spells them as plain text.

    pip install --target target/pyref tokenizers gguf
    PYTHONPATH=target/pyref python3 crates/llm-local/scripts/qwen2_tokenizer_reference.py MODEL.gguf
"""
import json
import random
import sys

from gguf import GGUFReader
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers

PATTERN = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"

CORPUS = [
    "Hello world, it's 2024!\n\n  done  ",
    "I'M here, WE'RE there, they'Ll go; she'D've, don’t, rock'n'roll",
    "def add(a, b):\n    \"\"\"Adds.\"\"\"\n    return a + b\n\n\nif __name__ == \"__main__\":\n\tprint(add(1, 22))\n",
    "fn main() {\n    let v: Vec<u32> = (0..10).map(|x| x * 2).collect();\n    println!(\"{v:?}\");\n}\n",
    "{\"name\": \"read_file\", \"arguments\": {\"path\": \"src/main.rs\", \"start_line\": 120}}",
    "请使用仓库中的代码，将输入文件 /data/input.pdf 中的文本提取出来，并保存到 output.txt。",
    "任务描述：根据 README.md 的说明，训练模型并在测试集上评估准确率（accuracy ≥ 95%）。",
    "中文English混合text，数字123和标点！？",
    "日本語のテキストです。カタカナとひらがな。한국어 텍스트입니다.",
    "emoji 🦀🚀 👩‍💻 🇨🇳 ❤️ 1️⃣ done",
    "digits 12345 3.14159 1,000,000 -42 0x1F ٣٤٥ ½ Ⅻ ²",
    "   \t\t  x   \n\n\n  y\t\n \n",
    "line1\r\nline2\r\n\r\nline3\r\n",
    "a\u00a0b\u3000c\u2003d\u200be\u2028f\u0085g",
    "cafe\u0301 vs café, n\u0303o, Å vs A\u030a",
    "नमस्ते दुनिया, مرحبا بالعالم, Привет мир, Ελληνικά",
    "<tool_call>\n{\"name\": \"finish\", \"arguments\": {}}\n</tool_call>",
    "text that spells <|im_end|> and <|im_start|>user\nand <|endoftext|>",
    "   leading spaces and trailing   ",
    "\n\nnewlines first",
    "x = [1,2,3]  # comment\n    y = {'a': 1}\n",
    "'s 's'S 'T 'Re 'rE 'VE 'M 'LL 'D 'x ''s",
    "!!! ??? ... --- === +++ *** ### @@@",
    "path/to/file_name-v2.tar.gz; C:\\Users\\me\\file.txt",
    "\t\tindented\r\n\t\tmore\r\n",
    "SELECT * FROM users WHERE id = 42 AND name LIKE '%bob%';",
    "",
    " ",
    "\n",
    "a",
    "ſ 'ſ ǅ ǈ Ǳ ß ẞ ﬁ",
    "$ cargo test -p llm-local --lib -- --nocapture 2>&1 | tail -n 20",
]

POOL = list("aZé中文 \t\n\r'sSdDlLtT0123456789٣½Ⅻ!?.,;:-_/\\\"{}[]()<>😀🦀\u00a0\u3000\u0301\u200b") + [
    "<tool_call>", "</tool_call>", "\r\n", "  ", "'ll", "'RE", "ing", "的", "和", "👩‍💻",
]


def main():
    reader = GGUFReader(sys.argv[1])
    fields = reader.fields
    tokens = fields["tokenizer.ggml.tokens"].contents()
    types = fields["tokenizer.ggml.token_type"].contents()
    merges = [tuple(m.split(" ", 1)) for m in fields["tokenizer.ggml.merges"].contents()]
    vocab = {t: i for i, t in enumerate(tokens)}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token=None, fuse_unk=False, byte_fallback=False))
    tok.normalizer = normalizers.NFC()
    split = pre_tokenizers.Split(Regex(PATTERN), behavior="isolated", invert=False)
    tok.pre_tokenizer = pre_tokenizers.Sequence([split, pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    user_defined = [t for t, ty in zip(tokens, types) if ty == 4]
    tok.add_tokens([AddedToken(t, normalized=False, special=False) for t in user_defined])
    for t in user_defined:
        assert tok.token_to_id(t) == vocab[t], t

    rng = random.Random(27)
    texts = list(CORPUS)
    for _ in range(120):
        texts.append("".join(rng.choice(POOL) for _ in range(rng.randint(1, 30))))

    cases = []
    for text in texts:
        normalized = tok.normalizer.normalize_str(text)
        pieces = [p for p, _ in split.pre_tokenize_str(normalized)]
        ids = tok.encode(text, add_special_tokens=False).ids
        cases.append({"text": text, "pieces": pieces, "ids": ids})
    out = {
        "source": "crates/llm-local/scripts/qwen2_tokenizer_reference.py on qwen2.5-coder-1.5b-instruct-q4_k_m.gguf (sha256 cc324af0...) with tokenizers "
        + __import__("tokenizers").__version__,
        "user_defined": user_defined,
        "cases": cases,
    }
    json.dump(out, sys.stdout, ensure_ascii=False, indent=None, separators=(",", ":"))
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
