#!/usr/bin/env python3
"""Generates the PyTorch parity fixtures in tests/fixtures/parity/ (format: docs/PARITY.md).

Needs a full `pip install torch safetensors` (the CPU wheel is enough). Run from the repo root:

    python3 scripts/gen_parity_fixtures.py [OUT_DIR]

The reference modules are the seeds' classes, copied verbatim below, and torch.nn's. Masks are
stored as U8 with 1 = may not be attended. A query whose keys are all masked gets a zero context
and zero weights (PyTorch gives NaN or a uniform average there); the fix-up is explicit below.
"""
import json
import math
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import save_file

OUT = Path(sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/parity")


# ---- seed 000: BahdanauAttention, LuongAttention, SelfAttention (verbatim but for the mask) ----
class BahdanauAttention(nn.Module):
    def __init__(self, hidden_dim):
        super().__init__()
        self.W1 = nn.Linear(hidden_dim, hidden_dim)
        self.W2 = nn.Linear(hidden_dim, hidden_dim)
        self.V = nn.Linear(hidden_dim, 1)

    def scores(self, query, keys):
        query = query.unsqueeze(1).repeat(1, keys.shape[1], 1)
        energy = torch.tanh(self.W1(query) + self.W2(keys))
        return self.V(energy).squeeze(2)


class LuongAttention(nn.Module):
    def __init__(self, hidden_dim, method="general"):
        super().__init__()
        self.method = method
        if method == "general":
            self.W = nn.Linear(hidden_dim, hidden_dim)
        elif method == "concat":
            self.W = nn.Linear(hidden_dim * 2, hidden_dim)
            self.V = nn.Linear(hidden_dim, 1)

    def scores(self, query, keys):
        if self.method == "dot":
            return torch.bmm(query.unsqueeze(1), keys.transpose(1, 2)).squeeze(1)
        if self.method == "general":
            return torch.bmm(self.W(query).unsqueeze(1), keys.transpose(1, 2)).squeeze(1)
        query_expanded = query.unsqueeze(1).repeat(1, keys.shape[1], 1)
        energy = torch.tanh(self.W(torch.cat([query_expanded, keys], dim=2)))
        return self.V(energy).squeeze(2)


def alignment(module, query, keys, mask):
    """The seeds' softmax and bmm, with masked scores excluded (mask: True = padding)."""
    scores = module.scores(query, keys)
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = torch.nan_to_num(F.softmax(scores, dim=1), nan=0.0)
    context = torch.bmm(weights.unsqueeze(1), keys).squeeze(1)
    return context, weights


class SelfAttention(nn.Module):
    def __init__(self, hidden_dim, heads=8):
        super().__init__()
        self.hidden_dim = hidden_dim
        self.heads = heads
        self.head_dim = hidden_dim // heads
        self.q_linear = nn.Linear(hidden_dim, hidden_dim)
        self.k_linear = nn.Linear(hidden_dim, hidden_dim)
        self.v_linear = nn.Linear(hidden_dim, hidden_dim)
        self.fc = nn.Linear(hidden_dim, hidden_dim)

    def forward(self, x, mask=None):
        batch_size, seq_len = x.shape[0], x.shape[1]
        Q = self.q_linear(x).view(batch_size, seq_len, self.heads, self.head_dim).permute(0, 2, 1, 3)
        K = self.k_linear(x).view(batch_size, seq_len, self.heads, self.head_dim).permute(0, 2, 1, 3)
        V = self.v_linear(x).view(batch_size, seq_len, self.heads, self.head_dim).permute(0, 2, 1, 3)
        energy = torch.matmul(Q, K.permute(0, 1, 3, 2)) / (self.head_dim ** 0.5)
        if mask is not None:
            energy = energy.masked_fill(mask == 0, -1e10)
        attention = F.softmax(energy, dim=-1)
        output = torch.matmul(attention, V)
        output = output.permute(0, 2, 1, 3).contiguous().view(batch_size, seq_len, self.hidden_dim)
        return self.fc(output), attention


# ---- seed 001: MultiHeadAttention, PositionalEncoding ----
class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.d_model, self.num_heads, self.d_k = d_model, num_heads, d_model // num_heads
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)

    def forward(self, query, key, value, mask=None):
        batch_size = query.size(0)
        Q = self.W_q(query).view(batch_size, -1, self.num_heads, self.d_k).transpose(1, 2)
        K = self.W_k(key).view(batch_size, -1, self.num_heads, self.d_k).transpose(1, 2)
        V = self.W_v(value).view(batch_size, -1, self.num_heads, self.d_k).transpose(1, 2)
        scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(mask == 0, -1e9)
        attention_weights = torch.softmax(scores, dim=-1)
        context = torch.matmul(attention_weights, V)
        context = context.transpose(1, 2).contiguous().view(batch_size, -1, self.d_model)
        return self.W_o(context), attention_weights


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=5000):
        super().__init__()
        pe = torch.zeros(max_len, d_model)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe.unsqueeze(0))

    def forward(self, x):
        return x + self.pe[:, : x.size(1)]


# ---- seed 002: ScaledDotProductAttention ----
class ScaledDotProductAttention(nn.Module):
    def __init__(self, d_model):
        super().__init__()
        self.scale = np.sqrt(d_model)

    def forward(self, query, key, value, mask=None):
        scores = torch.matmul(query, key.transpose(-2, -1)) / self.scale
        if mask is not None:
            scores = scores.masked_fill(mask == 0, -1e9)
        attention_weights = F.softmax(scores, dim=-1)
        return torch.matmul(attention_weights, value), attention_weights


def lexical_bias(table, source, weights, eps):
    """Arthur et al. 2016, "bias": log(Σ_j a_tj p_lex(· | f_j) + ε), [B, T, V_t]."""
    rows = F.embedding(source, table)  # [B, S, V_t]
    return torch.log(torch.bmm(weights, rows) + eps)


# ---- helpers ----
def write(name, kind, config, params=None, inputs=None, outputs=None, compare=None, atol=None, rtol=None):
    tensors = {}
    for prefix, group in (("param", params), ("input", inputs), ("output", outputs), ("compare", compare)):
        for key, value in (group or {}).items():
            value = value.detach().clone().contiguous()
            if value.dtype == torch.bool:
                value = value.to(torch.uint8)
            tensors[f"{prefix}.{key}"] = value
    metadata = {"module": kind, "config": json.dumps(config)}
    if atol is not None:
        metadata["atol"] = str(atol)
    if rtol is not None:
        metadata["rtol"] = str(rtol)
    OUT.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(OUT / f"{name}.safetensors"), metadata=metadata)
    print(f"wrote {name}.safetensors ({kind})")


def zero_all_masked(weights, masked, output=None, fill=None):
    """Rows whose keys are all masked: weights 0 and output `fill` (0, or W_o's bias)."""
    dead = masked.all(dim=-1)  # [.., Tq]
    weights = weights.masked_fill(dead.unsqueeze(-1), 0.0)
    if output is not None:
        row = torch.zeros(output.shape[-1]) if fill is None else fill
        output = torch.where(dead.unsqueeze(-1), row.expand_as(output), output)
    return weights, output


def positional(tq, tk, causal=False, window=None):
    i = torch.arange(tq).unsqueeze(1)
    j = torch.arange(tk).unsqueeze(0)
    masked = torch.zeros(tq, tk, dtype=torch.bool)
    if causal:
        masked |= j > i
    if window is not None:
        masked |= (i - j).abs() > window
    return masked


def main():
    torch.manual_seed(0)
    B, S, H = 3, 6, 8
    padding = torch.tensor([[0, 0, 0, 0, 1, 1], [0, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 1]], dtype=torch.bool)

    # additive and luong: query [B,H], keys [B,S,H]; batch item 2 is all padding.
    with torch.no_grad():
        query, keys = torch.randn(B, H), torch.randn(B, S, H)
        bahdanau = BahdanauAttention(H)
        for name, mask in (("additive", None), ("additive_padded", padding)):
            context, weights = alignment(bahdanau, query, keys, mask)
            inputs = {"query": query, "keys": keys} | ({"mask": mask} if mask is not None else {})
            write(name, "additive", {"hidden_dim": H}, bahdanau.state_dict(), inputs,
                  {"context": context, "weights": weights})
        for method in ("dot", "general", "concat"):
            luong = LuongAttention(H, method)
            context, weights = alignment(luong, query, keys, padding)
            write(f"luong_{method}", "luong", {"hidden_dim": H, "method": method}, luong.state_dict(),
                  {"query": query, "keys": keys, "mask": padding}, {"context": context, "weights": weights})

        # scaled dot-product, seed 002 (scale √d_model).
        D, Tq, Tk, Dv = 8, 5, 7, 6
        sdp = ScaledDotProductAttention(D)
        q, k, v = torch.randn(2, Tq, D), torch.randn(2, Tk, D), torch.randn(2, Tk, Dv)
        output, weights = sdp(q, k, v)
        write("sdp_plain", "scaled_dot_product", {"d_model": D}, {}, {"query": q, "key": k, "value": v},
              {"output": output, "weights": weights})
        masked = torch.rand(2, Tq, Tk) < 0.4
        masked[0, 2, :] = True  # a query with every key masked
        output, weights = sdp(q, k, v, (~masked).int())
        weights, output = zero_all_masked(weights, masked, output)
        write("sdp_masked", "scaled_dot_product", {"d_model": D}, {},
              {"query": q, "key": k, "value": v, "mask": masked}, {"output": output, "weights": weights})
        T = 9
        x, y = torch.randn(2, T, D), torch.randn(2, T, Dv)
        for name, config in (("sdp_causal", {"causal": True, "window": None}),
                             ("sdp_window", {"causal": False, "window": 2}),
                             ("sdp_causal_window", {"causal": True, "window": 3})):
            pos = positional(T, T, config["causal"], config["window"])
            output, weights = sdp(x, x, y, (~pos).int().expand(2, T, T))
            write(name, "scaled_dot_product", {"d_model": D} | config, {}, {"query": x, "key": x, "value": y},
                  {"output": output, "weights": weights})
        # a longer causal sequence for the chunked path (weights left out).
        T, D = 300, 16
        x, y = torch.randn(1, T, D), torch.randn(1, T, D)
        output, _ = sdp.__class__(D)(x, x, y, (~positional(T, T, True)).int().unsqueeze(0))
        write("sdp_causal_long", "scaled_dot_product", {"d_model": D, "causal": True}, {},
              {"query": x, "key": x, "value": y}, {"output": output})

        # multi-head attention, seed 001 (cross-attention, mask shared by the heads).
        D, h = 16, 4
        mha = MultiHeadAttention(D, h)
        q, kv = torch.randn(2, Tq, D), torch.randn(2, Tk, D)
        masked = torch.rand(2, Tq, Tk) < 0.3
        masked[1, 0, :] = True
        output, weights = mha(q, kv, kv, (~masked).int().unsqueeze(1))
        weights, _ = zero_all_masked(weights, masked.unsqueeze(1).expand(2, h, Tq, Tk))
        _, output = zero_all_masked(weights[:, 0], masked, output, fill=mha.W_o.bias)
        write("multi_head_cross_masked", "multi_head", {"d_model": D, "num_heads": h}, mha.state_dict(),
              {"query": q, "key": kv, "value": kv, "mask": masked}, {"output": output, "weights": weights})
        output, weights = mha(q, q, q)
        write("multi_head_self", "multi_head", {"d_model": D, "num_heads": h}, mha.state_dict(),
              {"query": q, "key": q, "value": q}, {"output": output, "weights": weights})

        # self-attention as in the "Attention Mechanisms" tutorial's SelfAttention (mask: 1 = attend there; stored inverted).
        selfattn = SelfAttention(D, heads=2)
        x = torch.randn(2, 6, D)
        masked = positional(6, 6, causal=True).unsqueeze(0).expand(2, 6, 6).clone()
        masked[1, :, 4:] = True
        output, weights = selfattn(x, (~masked).int().unsqueeze(1))
        write("self_attention_causal_padded", "self_attention", {"hidden_dim": D, "heads": 2},
              selfattn.state_dict(), {"x": x, "mask": masked}, {"output": output, "weights": weights})

        # torch.nn.MultiheadAttention: key padding and an attention mask (True = ignore).
        torch_mha = nn.MultiheadAttention(D, h, batch_first=True).eval()
        kpm = torch.tensor([[False] * Tk, [False] * (Tk - 2) + [True] * 2])
        am = positional(Tq, Tk, causal=True)
        output, weights = torch_mha(q, kv, kv, key_padding_mask=kpm, attn_mask=am,
                                    need_weights=True, average_attn_weights=False)
        write("torch_multihead_masked", "torch_multihead", {"embed_dim": D, "num_heads": h},
              torch_mha.state_dict(),
              {"query": q, "key": kv, "value": kv, "key_padding_mask": kpm, "attn_mask": am},
              {"output": output, "weights": weights})

        # grouped-query and multi-query attention through F.scaled_dot_product_attention.
        D, nh, T = 32, 8, 7
        x = torch.randn(2, T, D)
        for n_kv, causal in ((8, False), (2, True), (1, True), (4, False)):
            d_head = D // nh
            proj = {"q_proj.weight": torch.randn(D, D) / math.sqrt(D),
                    "k_proj.weight": torch.randn(n_kv * d_head, D) / math.sqrt(D),
                    "v_proj.weight": torch.randn(n_kv * d_head, D) / math.sqrt(D),
                    "o_proj.weight": torch.randn(D, D) / math.sqrt(D)}
            qh = (x @ proj["q_proj.weight"].T).view(2, T, nh, d_head).transpose(1, 2)
            kh = (x @ proj["k_proj.weight"].T).view(2, T, n_kv, d_head).transpose(1, 2)
            vh = (x @ proj["v_proj.weight"].T).view(2, T, n_kv, d_head).transpose(1, 2)
            ctx = F.scaled_dot_product_attention(qh, kh, vh, is_causal=causal, enable_gqa=True)
            output = ctx.transpose(1, 2).reshape(2, T, D) @ proj["o_proj.weight"].T
            write(f"grouped_query_kv{n_kv}{'_causal' if causal else ''}", "grouped_query",
                  {"d_model": D, "n_heads": nh, "n_kv_heads": n_kv, "causal": causal}, proj,
                  {"x": x}, {"output": output})

        # torch.nn.TransformerEncoderLayer, eval mode, with key padding (padded outputs not compared).
        D, nhead, T = 16, 4, 6
        src = torch.randn(2, T, D)
        kpm = torch.tensor([[False] * T, [False] * (T - 2) + [True] * 2])
        for activation, norm_first in (("relu", False), ("gelu", True)):
            layer = nn.TransformerEncoderLayer(D, nhead, dim_feedforward=32, dropout=0.0, activation=activation,
                                               layer_norm_eps=1e-5, batch_first=True, norm_first=norm_first).eval()
            for p in layer.parameters():  # LayerNorms start at 1/0: make them matter
                p.data.add_(0.1 * torch.randn_like(p))
            output = layer(src, src_key_padding_mask=kpm)
            compare = (~kpm).unsqueeze(-1).expand(2, T, D)
            write(f"transformer_encoder_layer_{activation}_{'pre' if norm_first else 'post'}norm",
                  "transformer_encoder_layer",
                  {"d_model": D, "nhead": nhead, "dim_feedforward": 32, "activation": activation,
                   "layer_norm_eps": 1e-5, "norm_first": norm_first},
                  layer.state_dict(), {"src": src, "src_key_padding_mask": kpm}, {"output": output},
                  compare={"output": compare})

        # sinusoidal positions, seed 001.
        pe = PositionalEncoding(16, max_len=64)
        x = torch.randn(2, 40, 16)
        write("sinusoidal_position", "sinusoidal_position", {"d_model": 16, "max_len": 64}, {}, {"x": x},
              {"output": pe(x)})

        # Arthur et al. 2016's lexical bias: log(a · p_lex[source] + ε) added to the logits.
        # Source token 0 has no entry (a zero row); item 1's last source position is padding
        # (zero weight).
        Vs, Vt, S, T, eps = 7, 9, 4, 3, 1e-3
        table = torch.softmax(3 * torch.randn(Vs, Vt), dim=-1)
        table[0] = 0.0
        source = torch.tensor([[1, 2, 3, 0], [4, 5, 6, 0]])
        scores = torch.randn(2, T, S).masked_fill(torch.tensor([[False] * 3 + [False], [False] * 3 + [True]])
                                                  .unsqueeze(1), float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        logits = torch.randn(2, T, Vt)
        bias = lexical_bias(table, source, weights, eps)
        write("lexical_bias", "lexical_bias", {"source_vocab": Vs, "target_vocab": Vt, "epsilon": eps},
              {"table": table}, {"source": source, "weights": weights, "logits": logits},
              {"bias": bias, "log_probs": torch.log_softmax(logits + bias, dim=-1)})


if __name__ == "__main__":
    main()
