#!/usr/bin/env python3
"""transformers' MixtralSparseMoeBlock forward, timed beside examples/moe_speed.rs: 8 experts, 2 per
token, 512 wide, experts 1,792 wide, batch 1 x TOKENS, random weights, torch's threads as given.

    ~/.cache/attnzoo/ref-venv/bin/python scripts/bench_moe_torch.py [--tokens 256] [--repeats 20] [--threads 2]

Two of transformers' experts implementations are timed: `eager` (the modeling file's loop over the
chosen experts) and `grouped_mm` (its default where torch has it)."""
import argparse
import time

import torch
from transformers import MixtralConfig
from transformers.models.mixtral.modeling_mixtral import MixtralSparseMoeBlock

parser = argparse.ArgumentParser()
parser.add_argument("--tokens", type=int, default=256)
parser.add_argument("--repeats", type=int, default=20)
parser.add_argument("--threads", type=int, default=2)
args = parser.parse_args()
torch.set_num_threads(args.threads)
torch.manual_seed(0)
x = torch.randn(1, args.tokens, 512)
# (transformers' third, batched_mm, gathers each token's expert weights: ~3 s a forward here.)
for implementation in ("eager", "grouped_mm"):
    config = MixtralConfig(hidden_size=512, intermediate_size=1792, num_local_experts=8, num_experts_per_tok=2)
    config._experts_implementation = implementation
    block = MixtralSparseMoeBlock(config).eval()
    with torch.no_grad():
        for p in block.parameters():
            p.normal_(0.0, 0.02)
        times = []
        try:
            for round in range(args.repeats + 3):
                start = time.perf_counter()
                block(x)
                if round >= 3:
                    times.append((time.perf_counter() - start) * 1e3)
        except Exception as error:  # an implementation this torch build lacks
            print(f"transformers {implementation}: not available ({str(error).splitlines()[0][:80]})")
            continue
    times.sort()
    print(f"transformers {implementation} moe forward [1, {args.tokens}, 512], 8 experts top-2, "
          f"{args.threads} threads: min {times[0]:.2f} ms, median {times[len(times) // 2]:.2f} ms over {len(times)}")
