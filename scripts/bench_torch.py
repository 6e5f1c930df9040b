#!/usr/bin/env python3
"""PyTorch side of the README's attention timings, same shapes and thread count as the Rust bench.

    python3 scripts/bench_torch.py [--threads 2] [--passes N]

Prints mean milliseconds per forward pass for nn.MultiheadAttention (B=8, T=256, D=512, h=8) and
F.scaled_dot_product_attention (B=1, h=8, d=64, T in 128, 512, 2048); with --passes N, only the
multi-head forward, each of N passes timed alone, their fastest and median, as
`cargo run --release --example mha_forward` prints them. Needs `pip install torch`.
"""
import argparse
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def mean_ms(fn, warmup=3, repeat=20):
    for _ in range(warmup):
        fn()
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - start) / repeat * 1e3


def min_median_ms(fn, passes, warmup=5):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(passes):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    times.sort()
    return times[0], times[len(times) // 2]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--passes", type=int)
    args = parser.parse_args()
    if args.threads < 1 or (args.passes is not None and args.passes < 1):
        parser.error("--threads and --passes must be at least 1")
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    with torch.inference_mode():
        mha = nn.MultiheadAttention(512, 8, batch_first=True).eval()
        x = torch.randn(8, 256, 512)
        if args.passes:
            low, median = min_median_ms(lambda: mha(x, x, x, need_weights=False), args.passes)
            print(f"torch mha_b8_t256 forward: min {low:.2f} ms, median {median:.2f} ms over {args.passes} passes")
            return
        print(f"torch mha_b8_t256 forward: {mean_ms(lambda: mha(x, x, x, need_weights=False)):.2f} ms")
        for length in (128, 512, 2048):
            q = torch.randn(1, 8, length, 64)
            ms = mean_ms(lambda: F.scaled_dot_product_attention(q, q, q), repeat=10)
            print(f"torch sdp T={length} forward: {ms:.2f} ms")
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")


if __name__ == "__main__":
    main()
