#!/usr/bin/env python3
"""Generates the research-variant parity fixtures in tests/fixtures/parity/ (format: docs/PARITY.md).

Run from the repo root with the reference venv (torch 2.9.0, transformers 5.23.0, x-transformers,
performer-pytorch, and pytorch-fast-transformers where its extension builds):

    ~/.cache/attnzoo/ref-venv/bin/python scripts/gen_parity_research.py [OUT_DIR]

Every fixture also carries `input.cotangent` (a fixed random tensor of the output's shape) and
`grad.<name>`: torch autograd's gradient of `sum(output * cotangent)` with respect to each input
and parameter named `<name>`. Masks are U8 with 1 = may not be attended. A query whose keys are
all masked gets a zero context (the references give NaN, a uniform average or their own zero);
the fix-up is explicit below, and the cotangent is zero there so that the gradients agree too.

References: transformers' `T5Attention`; x-transformers' `Attend` (sigmoid, talking heads);
pytorch-fast-transformers' `LinearAttention`/`CausalLinearAttention` (or, where its extension
does not build, the transcription `linear_attention_transcribed` of Katharopoulos et al.'s
equations 4-6 below, named in the fixture's `config.reference`); performer-pytorch's
`FastAttention`; `MultiheadDiffAttn`, transcribed below from the authors' multihead_diffattn.py
(microsoft/unilm, Diff-Transformer); Shaw et al. 2018's equations 3-5, transcribed below.
"""
import json
import math
import sys
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import save_file

OUT = Path(sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/parity")
SEED = 50
torch.manual_seed(SEED)
GEN = torch.Generator().manual_seed(SEED)


def randn(*shape, scale=1.0):
    return torch.randn(*shape, generator=GEN) * scale


def write(name, kind, config, params=None, inputs=None, outputs=None, grads=None, compare=None,
          atol=None, rtol=None):
    tensors = {}
    for prefix, group in (("param", params), ("input", inputs), ("output", outputs),
                          ("grad", grads), ("compare", compare)):
        for key, value in (group or {}).items():
            value = value.detach().clone().contiguous()
            if value.dtype == torch.bool:
                value = value.to(torch.uint8)
            elif value.dtype == torch.float64:
                value = value.float()
            tensors[f"{prefix}.{key}"] = value
    metadata = {"module": kind, "config": json.dumps(config)}
    if atol is not None:
        metadata["atol"] = str(atol)
    if rtol is not None:
        metadata["rtol"] = str(rtol)
    OUT.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(OUT / f"{name}.safetensors"), metadata=metadata)
    print(f"wrote {name}.safetensors ({kind})")


def gradients(output, cotangent, named):
    """torch autograd of sum(output * cotangent) for every named leaf tensor."""
    leaves = list(named.values())
    grads = torch.autograd.grad((output * cotangent).sum(), leaves, allow_unused=True)
    return {name: (g if g is not None else torch.zeros_like(t))
            for (name, t), g in zip(named.items(), grads)}


def padding_mask(batch, length, lengths):
    """[B, T] bool, True = padding; a length of 0 makes every key of that row padding."""
    return torch.arange(length)[None, :] >= torch.tensor(lengths)[:, None]


# ---- 1. T5 relative position bias: transformers' T5Attention ----
def t5_fixtures():
    from transformers import T5Config
    from transformers.models.t5.modeling_t5 import T5Attention

    B, T, H, d_kv = 2, 7, 3, 5
    D = H * d_kv
    for name, is_decoder in (("t5_attention_encoder_padded", False), ("t5_attention_decoder_causal", True)):
        config = T5Config(d_model=D, d_kv=d_kv, num_heads=H, relative_attention_num_buckets=8,
                          relative_attention_max_distance=5, is_decoder=is_decoder, dropout_rate=0.0)
        config._attn_implementation = "eager"
        module = T5Attention(config, has_relative_attention_bias=True, layer_idx=0, is_causal=is_decoder).eval()
        with torch.no_grad():
            for p in module.parameters():
                p.copy_(randn(*p.shape, scale=0.4))
        x = randn(B, T, D).requires_grad_()
        neg = torch.finfo(torch.float32).min
        if is_decoder:
            masked = torch.ones(T, T).triu(1).bool()[None, None]  # [1, 1, T, T]
            padding = None
            dead = torch.zeros(B, T, dtype=torch.bool)
        else:
            padding = padding_mask(B, T, [5, 0])  # row 1: every key padding
            masked = padding[:, None, None, :]
            dead = padding.all(dim=1, keepdim=True).expand(B, T)
        additive = torch.zeros(masked.shape).masked_fill(masked, neg)
        output, _, weights = module(x, mask=additive)
        # All-masked queries: zero context, so zero output (T5 has no output bias), zero weights.
        output = output.masked_fill(dead[..., None], 0.0)
        weights = weights.masked_fill(dead[:, None, :, None], 0.0)
        cotangent = randn(*output.shape).masked_fill(dead[..., None], 0.0)
        named = {"x": x, **{k: v for k, v in module.named_parameters()}}
        grads = gradients(output, cotangent, named)
        inputs = {"x": x, "cotangent": cotangent}
        if padding is not None:
            inputs["padding"] = padding
        write(name, "T5Attention",
              {"d_model": D, "d_kv": d_kv, "num_heads": H, "relative_attention_num_buckets": 8,
               "relative_attention_max_distance": 5, "is_decoder": is_decoder},
              params=dict(module.named_parameters()), inputs=inputs,
              outputs={"output": output, "weights": weights}, grads=grads)


# ---- 2./3. sigmoid attention and talking heads: x-transformers' Attend ----
def attend_fixtures():
    from x_transformers.attend import Attend

    B, H, T, d = 2, 3, 7, 5
    keep = ~padding_mask(B, T, [4, 0])  # x-transformers: True = attend
    dead = (~keep).all(dim=1)  # [B]

    def run(name, config, attend, causal, mask, n=None, params=None):
        q, k, v = (randn(B, H, T, d).requires_grad_() for _ in range(3))
        bias = None
        if n is not None:
            bias = torch.full((1, 1, T, T), -math.log(n))
        out, inter = attend(q, k, v, mask=mask, attn_bias=bias)
        rows = dead[:, None, None, None] if mask is not None else torch.zeros(B, 1, 1, 1, dtype=torch.bool)
        out = out.masked_fill(rows, 0.0)
        cotangent = randn(*out.shape).masked_fill(rows, 0.0)
        named = {"query": q, "key": k, "value": v, **(params or {})}
        grads = gradients(out, cotangent, named)
        inputs = {"query": q, "key": k, "value": v, "cotangent": cotangent}
        if mask is not None:
            inputs["padding"] = ~mask
        outputs = {"output": out}
        if config.get("sigmoid"):
            outputs["weights"] = inter.post_softmax_attn.masked_fill(rows, 0.0)
        write(name, "Attend", {**config, "causal": causal}, params=params, inputs=inputs,
              outputs=outputs, grads=grads)

    # Sigmoid attention, b = -ln n (the paper's bias, given to Attend as attn_bias).
    run("attend_sigmoid_padded", {"sigmoid": True, "n": T}, Attend(sigmoid=True), False, keep, n=T)
    run("attend_sigmoid_causal", {"sigmoid": True, "n": T}, Attend(sigmoid=True, causal=True), True, None, n=T)
    # Talking heads with random (not Dirac) mixing, so that the mixing is exercised.
    attend = Attend(heads=H, pre_talking_heads=True, post_talking_heads=True)
    with torch.no_grad():
        attend.pre_softmax_talking_heads.weight.copy_(randn(H, H, 1, 1, scale=0.5))
        attend.post_softmax_talking_heads.weight.copy_(randn(H, H, 1, 1, scale=0.5))
    params = dict(attend.named_parameters())
    config = {"heads": H, "pre_talking_heads": True, "post_talking_heads": True}
    run("attend_talking_heads_padded", config, attend, False, keep, params=params)
    causal = Attend(heads=H, pre_talking_heads=True, post_talking_heads=True, causal=True)
    causal.load_state_dict(attend.state_dict())
    run("attend_talking_heads_causal", config, causal, True, None, params=dict(causal.named_parameters()))


# ---- 4. linear attention: pytorch-fast-transformers, or the paper's equations ----
def linear_attention_transcribed(q, k, v, key_keep, causal, eps=1e-6):
    """Katharopoulos et al. 2020, eq. 4-6 (and their causal form), [N, L, H, E] as fast-transformers."""
    Q = F.elu(q) + 1
    K = (F.elu(k) + 1) * key_keep[:, :, None, None]
    if not causal:
        KV = torch.einsum("nshd,nshm->nhmd", K, v)
        Z = 1 / (torch.einsum("nlhd,nhd->nlh", Q, K.sum(dim=1)) + eps)
        return torch.einsum("nlhd,nhmd,nlh->nlhm", Q, KV, Z)
    L = q.shape[1]
    tril = torch.ones(L, L).tril().bool()
    kernel = torch.einsum("nlhd,nshd->nhls", Q, K).masked_fill(~tril, 0.0)
    Z = 1 / (torch.einsum("nlhi,nlhi->nlh", Q, K.cumsum(1)) + eps)
    return torch.einsum("nhls,nshm->nlhm", kernel, v) * Z[..., None]


def linear_fixtures():
    N, L, H, E = 2, 7, 3, 5
    try:
        from fast_transformers.attention import LinearAttention, CausalLinearAttention
        from fast_transformers.masking import FullMask, LengthMask, TriangularCausalMask
        reference = "fast_transformers"
    except ImportError:
        reference = "transcribed"
    for name, causal, lengths in (("linear_attention_padded", False, [4, 0]),
                                  ("causal_linear_attention", True, [L, L])):
        q, k, v = (randn(N, L, H, E).requires_grad_() for _ in range(3))
        keep = ~padding_mask(N, L, lengths)
        if reference == "fast_transformers":
            key_lengths = LengthMask(torch.tensor(lengths), max_len=L)
            if causal:
                out = CausalLinearAttention(E)(q, k, v, TriangularCausalMask(L), LengthMask(torch.tensor([L] * N)), key_lengths)
            else:
                out = LinearAttention(E)(q, k, v, FullMask(L), LengthMask(torch.tensor([L] * N)), key_lengths)
        else:
            out = linear_attention_transcribed(q, k, v, keep.float(), causal)
        cotangent = randn(*out.shape)
        grads = gradients(out, cotangent, {"queries": q, "keys": k, "values": v})
        inputs = {"queries": q, "keys": k, "values": v, "cotangent": cotangent}
        if not causal:
            inputs["padding"] = ~keep
        kind = "CausalLinearAttention" if causal else "LinearAttention"
        write(name, kind, {"eps": 1e-6, "reference": reference}, inputs=inputs,
              outputs={"output": out}, grads=grads)


# ---- 5. Performer FAVOR+: performer-pytorch's FastAttention ----
def performer_fixtures():
    from performer_pytorch import FastAttention

    B, H, T, d, m = 2, 3, 7, 6, 10
    torch.manual_seed(SEED)
    module = FastAttention(dim_heads=d, nb_features=m)
    q, k, v = (randn(B, H, T, d, scale=0.7).requires_grad_() for _ in range(3))
    out = module(q, k, v)
    cotangent = randn(*out.shape)
    grads = gradients(out, cotangent, {"q": q, "k": k, "v": v})
    write("performer_fast_attention", "FastAttention", {"dim_heads": d, "nb_features": m},
          params={"projection_matrix": module.projection_matrix},
          inputs={"q": q, "k": k, "v": v, "cotangent": cotangent}, outputs={"output": out},
          grads=grads)


# ---- 6. differential attention: the authors' MultiheadDiffAttn, transcribed ----
def lambda_init_fn(depth):
    return 0.8 - 0.6 * math.exp(-0.3 * depth)


class RMSNorm(nn.Module):
    """Diff-Transformer/diff/rms_norm.py."""
    def __init__(self, dim, eps=1e-6, elementwise_affine=True):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim)) if elementwise_affine else None

    def forward(self, x):
        output = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return output * self.weight if self.weight is not None else output


class MultiheadDiffAttn(nn.Module):
    """Diff-Transformer/multihead_diffattn.py, line by line, without the rotary embedding (rel_pos)
    and with num_kv_heads = num_heads; `attn_mask` additive, causal when None, as there."""
    def __init__(self, embed_dim, depth, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads // 2
        self.scaling = self.head_dim ** -0.5
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=False)
        self.k_proj = nn.Linear(embed_dim, embed_dim, bias=False)
        self.v_proj = nn.Linear(embed_dim, embed_dim, bias=False)
        self.out_proj = nn.Linear(self.num_heads * 2 * self.head_dim, embed_dim, bias=False)
        self.lambda_init = lambda_init_fn(depth)
        self.lambda_q1 = nn.Parameter(torch.zeros(self.head_dim).normal_(mean=0, std=0.1))
        self.lambda_k1 = nn.Parameter(torch.zeros(self.head_dim).normal_(mean=0, std=0.1))
        self.lambda_q2 = nn.Parameter(torch.zeros(self.head_dim).normal_(mean=0, std=0.1))
        self.lambda_k2 = nn.Parameter(torch.zeros(self.head_dim).normal_(mean=0, std=0.1))
        self.subln = RMSNorm(2 * self.head_dim, eps=1e-5, elementwise_affine=True)

    def forward(self, x, attn_mask=None):
        bsz, tgt_len, embed_dim = x.size()
        src_len = tgt_len
        q = self.q_proj(x).view(bsz, tgt_len, 2 * self.num_heads, self.head_dim)
        k = self.k_proj(x).view(bsz, src_len, 2 * self.num_heads, self.head_dim)
        v = self.v_proj(x).view(bsz, src_len, self.num_heads, 2 * self.head_dim)
        offset = src_len - tgt_len
        q = q.transpose(1, 2)
        k = k.transpose(1, 2)
        v = v.transpose(1, 2)
        q = q * self.scaling
        attn_weights = torch.matmul(q, k.transpose(-1, -2))
        if attn_mask is None:
            attn_mask = torch.triu(torch.zeros([tgt_len, src_len]).float().fill_(float("-inf")), 1 + offset)
        attn_weights = torch.nan_to_num(attn_weights)
        attn_weights = attn_weights + attn_mask
        attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32)
        lambda_1 = torch.exp(torch.sum(self.lambda_q1 * self.lambda_k1, dim=-1).float())
        lambda_2 = torch.exp(torch.sum(self.lambda_q2 * self.lambda_k2, dim=-1).float())
        lambda_full = lambda_1 - lambda_2 + self.lambda_init
        attn_weights = attn_weights.view(bsz, self.num_heads, 2, tgt_len, src_len)
        attn_weights = attn_weights[:, :, 0] - lambda_full * attn_weights[:, :, 1]
        attn = torch.matmul(attn_weights, v)
        attn = self.subln(attn)
        attn = attn * (1 - self.lambda_init)
        attn = attn.transpose(1, 2).reshape(bsz, tgt_len, self.num_heads * 2 * self.head_dim)
        return self.out_proj(attn)


def differential_fixtures():
    B, T, D, H, depth = 2, 7, 16, 2, 1
    module = MultiheadDiffAttn(D, depth, H)
    with torch.no_grad():
        for name, p in module.named_parameters():
            p.copy_(randn(*p.shape, scale=0.3) + (1.0 if name == "subln.weight" else 0.0))
    for name, causal in (("multihead_diffattn_causal", True), ("multihead_diffattn_padded", False)):
        x = randn(B, T, D).requires_grad_()
        if causal:
            padding, mask, dead = None, None, torch.zeros(B, dtype=torch.bool)
        else:
            padding = padding_mask(B, T, [5, 0])
            # Finite, so that the all-padding row is a uniform average (zeroed below), not NaN.
            mask = torch.zeros(B, 1, 1, T).masked_fill(padding[:, None, None, :], -1e30)
            dead = padding.all(dim=1)
        out = module(x, mask).masked_fill(dead[:, None, None], 0.0)
        cotangent = randn(*out.shape).masked_fill(dead[:, None, None], 0.0)
        named = {"x": x, **dict(module.named_parameters())}
        grads = gradients(out, cotangent, named)
        inputs = {"x": x, "cotangent": cotangent}
        if padding is not None:
            inputs["padding"] = padding
        write(name, "MultiheadDiffAttn",
              {"embed_dim": D, "num_heads": H, "depth": depth, "causal": causal,
               "reference": "transcribed from microsoft/unilm Diff-Transformer/multihead_diffattn.py"},
              params=dict(module.named_parameters()), inputs=inputs, outputs={"output": out},
              grads=grads)


# ---- 7. Shaw et al. 2018: relative position representations, the paper's equations ----
def shaw_attention(q, k, v, w_k, w_v, clip, keep=None, causal=False):
    """e_ij = q_i·(k_j + a^K_ij)/√d, α = softmax_j(e), z_i = Σ_j α_ij (v_j + a^V_ij),
    a_ij = w[clip(j − i, k) + k]; q, k, v [B, h, T, d]; keep [B, T] (True = attend)."""
    B, H, T, d = q.shape
    rel = torch.arange(T)[None, :] - torch.arange(T)[:, None]  # j − i
    index = rel.clamp(-clip, clip) + clip
    a_k, a_v = w_k[index], w_v[index]  # [T, T, d]
    scores = (q @ k.transpose(-1, -2) + torch.einsum("bhid,ijd->bhij", q, a_k)) / math.sqrt(d)
    masked = torch.zeros(B, 1, T, T, dtype=torch.bool)
    if keep is not None:
        masked = masked | ~keep[:, None, None, :]
    if causal:
        masked = masked | (rel > 0)[None, None]
    scores = scores.masked_fill(masked, float("-inf"))
    dead = masked.all(dim=-1, keepdim=True)
    alpha = torch.softmax(scores.masked_fill(dead, 0.0), dim=-1).masked_fill(masked, 0.0)
    return alpha @ v + torch.einsum("bhij,ijd->bhid", alpha, a_v), alpha


def shaw_fixtures():
    B, H, T, d, clip = 2, 3, 7, 5, 2
    w_k = randn(2 * clip + 1, d).requires_grad_()
    w_v = randn(2 * clip + 1, d).requires_grad_()
    for name, causal, lengths in (("shaw_relative_padded", False, [5, 0]), ("shaw_relative_causal", True, [T, T])):
        q, k, v = (randn(B, H, T, d).requires_grad_() for _ in range(3))
        padding = padding_mask(B, T, lengths)
        out, alpha = shaw_attention(q, k, v, w_k, w_v, clip, None if causal else ~padding, causal)
        cotangent = randn(*out.shape)
        grads = gradients(out, cotangent, {"query": q, "key": k, "value": v,
                                           "relative_key": w_k, "relative_value": w_v})
        inputs = {"query": q, "key": k, "value": v, "cotangent": cotangent}
        if not causal:
            inputs["padding"] = padding
        write(name, "ShawRelativeAttention", {"max_relative_position": clip, "causal": causal},
              params={"relative_key": w_k, "relative_value": w_v}, inputs=inputs,
              outputs={"output": out, "weights": alpha}, grads=grads)


if __name__ == "__main__":
    t5_fixtures()
    attend_fixtures()
    linear_fixtures()
    performer_fixtures()
    differential_fixtures()
    shaw_fixtures()
