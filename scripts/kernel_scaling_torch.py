#!/usr/bin/env python3
"""The PyTorch side of examples/kernel_scaling.rs: one non-causal forward of batch 1, 8 heads of 64,
min of `repeats`, and the process's peak resident memory. One kind and length per process.

    python3 scripts/kernel_scaling_torch.py {exact,linear,performer} T [repeats]

exact: F.scaled_dot_product_attention; linear: pytorch-fast-transformers' LinearAttention
(elu + 1); performer: performer-pytorch's FastAttention(64) (m = 266 features); t5: T5Attention's
compute_bias plus eager softmax attention; sigmoid / talking-heads: x-transformers' Attend;
differential: the authors' MultiheadDiffAttn core; shaw: the generator's transcription. 2 threads.
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
elif kind == "performer":
    from performer_pytorch import FastAttention
    module = FastAttention(64)
    run = lambda: module(q, k, v)
elif kind == "t5":
    from transformers import T5Config
    from transformers.models.t5.modeling_t5 import T5Attention
    config = T5Config(d_model=512, d_kv=64, num_heads=8)
    config._attn_implementation = "eager"
    module = T5Attention(config, has_relative_attention_bias=True)
    def run():
        bias = module.compute_bias(T, T)
        w = torch.softmax(q @ k.transpose(-1, -2) / 8.0 + bias, dim=-1)
        return w @ v
elif kind in ("sigmoid", "talking-heads"):
    import math
    from x_transformers.attend import Attend
    if kind == "sigmoid":
        module = Attend(sigmoid=True)
        run = lambda: module(q, k, v, attn_bias=torch.full((1, 1, T, T), -math.log(T)))
    else:
        module = Attend(heads=8, pre_talking_heads=True, post_talking_heads=True)
        run = lambda: module(q, k, v)
elif kind == "differential":
    # The core of the authors' MultiheadDiffAttn (scripts/gen_parity_research.py), heads of 2 x 32.
    lam = [torch.randn(32) * 0.1 for _ in range(4)]
    subln = torch.ones(64)
    def run():
        qs = q.reshape(1, 8, T, 2, 32).transpose(2, 3).reshape(1, 16, T, 32) * 32 ** -0.5
        ks = k.reshape(1, 8, T, 2, 32).transpose(2, 3).reshape(1, 16, T, 32)
        w = torch.softmax(qs @ ks.transpose(-1, -2), dim=-1).view(1, 8, 2, T, T)
        lam_full = torch.exp((lam[0] * lam[1]).sum()) - torch.exp((lam[2] * lam[3]).sum()) + 0.2
        a = (w[:, :, 0] - lam_full * w[:, :, 1]) @ v
        return a * torch.rsqrt(a.pow(2).mean(-1, keepdim=True) + 1e-5) * subln * 0.8
else:
    import importlib.util
    spec = importlib.util.spec_from_file_location("gen", __file__.replace("kernel_scaling_torch.py", "gen_parity_research.py"))
    gen = importlib.util.module_from_spec(spec)
    sys.argv = sys.argv[:1] + ["/tmp"]
    spec.loader.exec_module(gen)
    w_k, w_v = torch.randn(33, 64), torch.randn(33, 64)
    run = lambda: gen.shaw_attention(q, k, v, w_k, w_v, 16)
best = float("inf")
with torch.no_grad():
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"{kind} T={T} on torch: {best:.3f} s (min of {repeats}), peak RSS {peak:.0f} MiB")
