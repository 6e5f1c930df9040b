#!/usr/bin/env python3
"""Reference ids and decoded texts of the tokenizers transformers builds from two GGUF files, for
tests/gguf.rs (attnzoo::gguf_tokenizer must give the same).

Run with the reference venv (transformers 5.23.0, its tokenizers, gguf):

    ~/.cache/attnzoo/ref-venv/bin/python scripts/gen_gguf_tokenizer_reference.py [GGUF_DIR] [OUT]

GGUF_DIR defaults to $ATTNZOO_GGUF_DIR or ~/.cache/attnzoo/gguf (scripts/fetch-gguf.sh smollm2 and
scripts/fetch-gguf.sh gemma3 put the files there); OUT to tests/fixtures/gguf/tokenizer_reference.json.

Each file is loaded as `AutoTokenizer.from_pretrained(folder, gguf_file=name)` from a temporary
folder holding only a link to it, so that no tokenizer.json or config.json beside it is read. For
each text: `ids` = `tokenizer(text)["input_ids"]` (special tokens added as transformers adds them by
default) and `decoded` = `tokenizer.decode(ids)` (special tokens kept).
"""

import json
import os
import sys
import tempfile
from pathlib import Path

import tokenizers
import transformers
from transformers import AutoTokenizer

FILES = {
    "SmolLM2-135M-Instruct.Q4_1.gguf": "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n",
    "gemma-3-270m-q4_k_m.gguf": "<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n",
}

TEXTS = [
    "Hello world",
    "café naïve Zürich",
    "1234567 3.14",
    'fn main() { println!("hi"); }',
    "👋🏽 🚀",
    "  two  spaces",
    " leading space",
    "trailing spaces   ",
    "line one\nline two\n\n\tindented\ttab\r\nwindows",
    "日本語のテキスト、中文文本。",
    "",
    "don't I'll we've THEY'RE",
    "a\u00a0non-breaking\u2009thin space",
    "\n\n\n",
    "<unk> <s> </s> <pad> <mask> <bos> <eos> <|endoftext|> <think>",
]


def main():
    gguf_dir = Path(
        sys.argv[1]
        if len(sys.argv) > 1
        else os.environ.get("ATTNZOO_GGUF_DIR", Path.home() / ".cache" / "attnzoo" / "gguf")
    )
    out = Path(sys.argv[2] if len(sys.argv) > 2 else "tests/fixtures/gguf/tokenizer_reference.json")
    files = []
    for name, chat in FILES.items():
        path = gguf_dir / name
        if not path.is_file():
            sys.exit(f"{path} not found: run scripts/fetch-gguf.sh first")
        with tempfile.TemporaryDirectory() as folder:
            os.symlink(path.resolve(), Path(folder) / name)
            tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
        cases = []
        for text in TEXTS + [chat]:
            ids = tokenizer(text)["input_ids"]
            cases.append({"text": text, "ids": ids, "decoded": tokenizer.decode(ids)})
        files.append(
            {
                "file": name,
                "class": type(tokenizer).__name__,
                "len": len(tokenizer),
                "cases": cases,
            }
        )
        print(f"{name}: {type(tokenizer).__name__}, {len(tokenizer)} tokens, {len(cases)} texts", file=sys.stderr)
    reference = {
        "transformers": transformers.__version__,
        "tokenizers": tokenizers.__version__,
        "files": files,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(reference, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
