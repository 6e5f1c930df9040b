#!/usr/bin/env python3
"""Sentence-embedding throughput: attnzoo embed on each CPU backend beside sentence-transformers,
in one run on this machine, batches of 32.

    python scripts/bench_embed.py ATTNZOO_BINARY [--backends ndarray,flex,tch] [--repeat 16] [--threads N]

The input is tests/fixtures/embed/sentences.txt repeated --repeat times (20 sentences: short,
non-Latin, emoji, and two past 256 tokens). attnzoo is timed end to end on the whole input and on
one sentence; the difference is the embedding time (model loading cancels out). sentence-
transformers is timed on model.encode alone, after one warm-up call. Needs torch==2.9.0 and
sentence-transformers==5.1.2.
"""
import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

root = Path(__file__).resolve().parent.parent
parser = argparse.ArgumentParser()
parser.add_argument("binary")
parser.add_argument("--backends", default="ndarray,flex,tch")
parser.add_argument("--repeat", type=int, default=16)
parser.add_argument("--threads", type=int, default=os.cpu_count())
parser.add_argument("--model-dir", default=os.path.expanduser("~/.cache/attnzoo/all-MiniLM-L6-v2"))
args = parser.parse_args()

import torch  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402

torch.set_num_threads(args.threads)
sentences = (root / "tests/fixtures/embed/sentences.txt").read_text(encoding="utf-8").split("\n")[:-1]
corpus = sentences * args.repeat
model = SentenceTransformer(args.model_dir, device="cpu")
model.encode(corpus[:32], batch_size=32)
start = time.perf_counter()
model.encode(corpus, batch_size=32)
reference = len(corpus) / (time.perf_counter() - start)
print(f"{len(corpus)} sentences, batch 32, {args.threads} threads, torch {torch.__version__}")
print(f"sentence-transformers: {reference:8.1f} sentences/s")


def run(backend, lines):
    data = ("\n".join(lines) + "\n").encode()
    start = time.perf_counter()
    subprocess.run([args.binary, "embed", "--backend", backend, "--batch-size", "32", "--model-dir", args.model_dir],
                   input=data, stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


for backend in args.backends.split(","):
    run(backend, corpus[:1])
    whole, one = run(backend, corpus), run(backend, corpus[:1])
    rate = (len(corpus) - 1) / (whole - one)
    print(f"attnzoo {backend:8}:       {rate:8.1f} sentences/s  ({rate / reference:.2f}× sentence-transformers)")
sys.stdout.flush()
