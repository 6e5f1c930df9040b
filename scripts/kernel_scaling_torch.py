#!/usr/bin/env python3
"""The PyTorch side of examples/kernel_scaling.rs: one non-causal forward of batch 1, 8 heads of 64,
min of `repeats`, and the process's peak resident memory. One kind and length per process.

    python3 scripts/kernel_scaling_torch.py {exact,linear,performer} T [repeats]

exact: F.scaled_dot_product_attention; linear: pytorch-fast-transformers' LinearAttention
(elu + 1); performer: performer-pytorch's FastAttention(64) (m = 266 features). 2 threads.
"""
import resource
import sys
import time

import torch
import torch.nn.functional as F

torch.set_num_threads(2)
kind, T = sys.argv[1], int(sys.argv[2])
repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 2
q, k, v = (torch.randn(1, 8, T, 64) for _ in range(3))
if kind == "exact":
    run = lambda: F.scaled_dot_product_attention(q, k, v)
elif kind == "linear":
    from fast_transformers.attention import LinearAttention
    from fast_transformers.masking import FullMask, LengthMask
    module = LinearAttention(64)
    lengths = LengthMask(torch.tensor([T]))
    # fast-transformers' layout [N, L, H, E]
    ql, kl, vl = (t.transpose(1, 2).contiguous() for t in (q, k, v))
    run = lambda: module(ql, kl, vl, FullMask(T), lengths, lengths)
else:
    from performer_pytorch import FastAttention
    module = FastAttention(64)
    run = lambda: module(q, k, v)
best = float("inf")
with torch.no_grad():
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"{kind} T={T} on torch: {best:.3f} s (min of {repeats}), peak RSS {peak:.0f} MiB")
