#!/usr/bin/env python3
"""Parity fixtures of kind `DeepseekV3Attention` (multi-head latent attention, DeepSeek-V2/V3) for
tests/fixtures/parity/ (format: docs/PARITY.md; Rust side: tests/parity/mla.rs).

The reference is transformers' own `DeepseekV3Attention` (transformers 5.23.0, torch 2.9.0),
imported, not re-implemented: eval mode, `attn_implementation="eager"`, random weights from the
seed below, cos/sin from its own `DeepseekV3RotaryEmbedding` at positions 0..T-1 (left padding
keeps those positions: only the mask changes); one fixture with DeepSeek's YaRN rope scaling. Run from the repo root with the reference venv:

    ~/.cache/attnzoo/ref-venv/bin/python scripts/gen_parity_mla.py [OUT_DIR]

Each fixture stores:
- `param.<name>`: every entry of the module's `state_dict()` (Linear weights `[out, in]`);
- `input.hidden_states [B,T,D]`, `input.padding [B,T]` (U8, 1 = padding), optionally
  `input.mask [B,T,T]` (U8, 1 = may not attend); `config.causal` adds the causal mask. The
  reference gets all of them as one additive `[B,1,T,T]` mask (`finfo.min` where masked);
- `output.output [B,T,D]`, `output.weights [B,h,T,T]`, and `compare.output`/`compare.weights`
  with 0 on the queries whose keys are all masked (transformers averages the values uniformly
  there; the zoo gives a zero context and zero weights);
- gradients: `input.probe [B,T,D]` is a fixed random tensor, zero on those all-masked queries, and
  `grad.hidden_states` and `grad.<param name>` are torch autograd's gradients of
  `sum(output * probe)` (the probe's zeros keep the rows the two sides define differently out of
  the loss).
"""
import json
import sys
from pathlib import Path

import torch
from safetensors.torch import save_file
from transformers.models.deepseek_v3.configuration_deepseek_v3 import DeepseekV3Config
from transformers.models.deepseek_v3.modeling_deepseek_v3 import (
    DeepseekV3Attention,
    DeepseekV3RotaryEmbedding,
)

OUT = Path(sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/parity")
SEED = 4747


def fixture(name, *, hidden, heads, q_lora_rank, kv_lora_rank, nope, rope, v, bias, theta,
            causal, padding, mask=None, batch, length, yarn=None):
    rope_parameters = {"rope_type": "default", "rope_theta": theta}
    max_positions = 4096
    if yarn is not None:
        rope_parameters = {"rope_type": "yarn", "rope_theta": theta, **yarn}
        # transformers takes the factor of its default attention scaling from
        # max_position_embeddings / original_max_position_embeddings: keep the two equal.
        max_positions = int(yarn["factor"] * yarn["original_max_position_embeddings"])
    config = DeepseekV3Config(
        hidden_size=hidden,
        num_attention_heads=heads,
        # MLA shares one latent among all heads; transformers' eager path repeats its expanded keys
        # `heads / num_key_value_heads` times, so the two must be equal.
        num_key_value_heads=heads,
        q_lora_rank=q_lora_rank,
        kv_lora_rank=kv_lora_rank,
        qk_nope_head_dim=nope,
        qk_rope_head_dim=rope,
        v_head_dim=v,
        attention_bias=bias,
        rms_norm_eps=1e-6,
        rope_parameters=rope_parameters,
        max_position_embeddings=max_positions,
        rope_interleave=True,
        attention_dropout=0.0,
    )
    config._attn_implementation = "eager"
    attention = DeepseekV3Attention(config, layer_idx=0).eval()
    rotary = DeepseekV3RotaryEmbedding(config)
    with torch.no_grad():
        for pname, param in attention.named_parameters():
            if pname.endswith("layernorm.weight"):
                param.copy_(1.0 + 0.2 * torch.randn_like(param))
            elif pname.endswith(".bias"):
                param.copy_(0.1 * torch.randn_like(param))
            else:
                param.copy_(torch.randn_like(param) / param.shape[1] ** 0.5)

    x = torch.randn(batch, length, hidden, requires_grad=True)
    padding = torch.tensor(padding, dtype=torch.bool)
    masked = padding[:, None, :].expand(batch, length, length)
    if causal:
        masked = masked | torch.ones(length, length, dtype=torch.bool).triu(1)
    if mask is not None:
        mask = torch.tensor(mask, dtype=torch.bool)
        masked = masked | mask
    additive = torch.zeros(batch, 1, length, length).masked_fill(
        masked[:, None], torch.finfo(torch.float32).min
    )
    position_ids = torch.arange(length)[None].expand(batch, length)
    cos, sin = rotary(x, position_ids)
    output, weights = attention(x, position_embeddings=(cos, sin), attention_mask=additive)

    alive = ~masked.all(-1)  # [B, T]: queries with at least one key
    probe = torch.randn(batch, length, hidden) * alive[..., None]
    (output * probe).sum().backward()

    tensors = {f"param.{k}": t.detach().contiguous() for k, t in attention.state_dict().items()}
    tensors["input.hidden_states"] = x.detach()
    tensors["input.padding"] = padding.to(torch.uint8)
    if mask is not None:
        tensors["input.mask"] = mask.to(torch.uint8)
    tensors["input.probe"] = probe
    tensors["output.output"] = output.detach()
    tensors["output.weights"] = weights.detach()
    tensors["compare.output"] = alive[..., None].expand(batch, length, hidden).to(torch.uint8)
    tensors["compare.weights"] = (
        alive[:, None, :, None].expand(batch, heads, length, length).to(torch.uint8)
    )
    tensors["grad.hidden_states"] = x.grad
    for pname, param in attention.named_parameters():
        tensors[f"grad.{pname}"] = param.grad
    tensors = {k: t.contiguous() for k, t in tensors.items()}
    meta = {
        "hidden_size": hidden,
        "num_attention_heads": heads,
        "q_lora_rank": q_lora_rank,
        "kv_lora_rank": kv_lora_rank,
        "qk_nope_head_dim": nope,
        "qk_rope_head_dim": rope,
        "v_head_dim": v,
        "attention_bias": bias,
        "rms_norm_eps": 1e-6,
        "rope_theta": theta,
        "rope_interleave": True,
        "causal": causal,
        "rope_scaling": yarn,
    }
    OUT.mkdir(parents=True, exist_ok=True)
    save_file(
        tensors,
        str(OUT / f"{name}.safetensors"),
        metadata={"module": "DeepseekV3Attention", "config": json.dumps(meta)},
    )
    print(f"{name}: {len(tensors)} tensors, {int((~alive).sum())} all-masked queries")


def main():
    torch.manual_seed(SEED)
    # Low-rank queries, causal, right padding (row 1) and left padding (row 2, whose first three
    # queries see only padding: all-masked rows).
    fixture(
        "deepseek_v3_attention_q_lora",
        hidden=20, heads=3, q_lora_rank=12, kv_lora_rank=10, nope=6, rope=4, v=5,
        bias=False, theta=10000.0, causal=True, batch=3, length=7,
        padding=[[0] * 7, [0] * 5 + [1] * 2, [1] * 3 + [0] * 4],
    )
    # Full-rank queries (q_lora_rank None), biases, not causal, an explicit mask with one query
    # that may attend to nothing (row 1, query 2), and a padded key in row 0.
    mask = [[[0] * 5 for _ in range(5)] for _ in range(2)]
    mask[0][1][3] = mask[0][4][0] = 1
    mask[1][2] = [1] * 5
    mask[1][0][1] = 1
    fixture(
        "deepseek_v3_attention_full_q",
        hidden=18, heads=2, q_lora_rank=None, kv_lora_rank=7, nope=5, rope=6, v=9,
        bias=True, theta=1000.0, causal=False, batch=2, length=5,
        padding=[[0, 0, 0, 0, 1], [0] * 5], mask=mask,
    )
    # DeepSeek's YaRN: frequencies interpolated past 4 positions, cos/sin scaled by
    # mscale(1) / mscale(0.8) and the softmax scale by mscale(0.8)².
    fixture(
        "deepseek_v3_attention_yarn",
        hidden=16, heads=2, q_lora_rank=6, kv_lora_rank=6, nope=4, rope=8, v=3,
        bias=False, theta=10000.0, causal=True, batch=2, length=9,
        padding=[[0] * 9, [1] * 2 + [0] * 7],
        yarn={"factor": 4.0, "original_max_position_embeddings": 4, "mscale": 1.0,
              "mscale_all_dim": 0.8, "beta_fast": 32.0, "beta_slow": 1.0},
    )


if __name__ == "__main__":
    main()
