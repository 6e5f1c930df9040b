#!/usr/bin/env python3
"""PyTorch beside `examples/memory_efficient.rs`: exact attention of batch 1, 8 heads of 64 at
length T with F.scaled_dot_product_attention, its time and the process's peak resident memory.

    python3 scripts/memory_efficient_torch.py --len 16384 [--causal] [--threads 2]

Needs `pip install torch`.
"""
import argparse
import resource
import time

import torch
import torch.nn.functional as F


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--len", type=int, default=16384)
    parser.add_argument("--causal", action="store_true")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    # The same inputs as the Rust example: uniform in [0, 1).
    q, k, v = (torch.rand(1, 8, args.len, 64) for _ in range(3))
    with torch.inference_mode():
        start = time.perf_counter()
        context = F.scaled_dot_product_attention(q, k, v, is_causal=args.causal)
        checksum = context.sum().item()
        seconds = time.perf_counter() - start
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    mask = "causal" if args.causal else "full"
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads: T={args.len} {mask} exact "
        f"attention in {seconds:.2f} s, checksum {checksum:.3f}, peak RSS {peak_mib:.0f} MiB"
    )


if __name__ == "__main__":
    main()
