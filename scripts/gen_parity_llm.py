#!/usr/bin/env python3
"""Generates the parity fixtures of today's LLM blocks (format: docs/PARITY.md) from Hugging Face
transformers' own classes: nothing here re-implements a reference, every output comes from the
imported module or function.

Needs the reference venv (torch 2.9.0, transformers 5.23.0, safetensors). From the repo root:

    ~/.cache/attnzoo/ref-venv/bin/python scripts/gen_parity_llm.py [OUT_DIR]

Every fixture holds random weights from this script's seed (written over the reference's own
initialisation, under its own `state_dict()` names), inputs, the outputs of the module in eval mode,
and gradients: with a fixed random cotangent of each output's shape (`input.cotangent` for a module
whose one output is `output`, `input.cotangent.<output>` where there are several), the loss is
L = sum over outputs of sum(output * cotangent), and `grad.<name>` is torch autograd's dL/dname
for the input or parameter `name`. Masks are U8 with 1 = may not be attended.
"""
import json
import sys
from pathlib import Path

import torch
import transformers
from safetensors.torch import save_file
from transformers import (
    DeepseekV3Config,
    Gemma2Config,
    GemmaConfig,
    GptOssConfig,
    GPTNeoXConfig,
    LlamaConfig,
    MistralConfig,
    MixtralConfig,
    Qwen3Config,
    Qwen3MoeConfig,
)
from transformers.masking_utils import create_causal_mask, create_sliding_window_causal_mask
from transformers.models.gemma.modeling_gemma import GemmaMLP
from transformers.models.gemma2.modeling_gemma2 import Gemma2Attention, Gemma2RMSNorm, Gemma2RotaryEmbedding
from transformers.models.gpt_oss.modeling_gpt_oss import GptOssAttention, GptOssMLP, GptOssRotaryEmbedding
from transformers.models.gpt_neox.modeling_gpt_neox import (
    GPTNeoXRotaryEmbedding,
)
from transformers.models.gpt_neox.modeling_gpt_neox import (
    apply_rotary_pos_emb as neox_apply_rotary_pos_emb,
)
from transformers.models.llama.modeling_llama import (
    LlamaMLP,
    LlamaRMSNorm,
    LlamaRotaryEmbedding,
    apply_rotary_pos_emb,
)
from transformers.models.mistral.modeling_mistral import MistralAttention, MistralRotaryEmbedding
from transformers.models.deepseek_v3.modeling_deepseek_v3 import DeepseekV3MoE
from transformers.models.mixtral.modeling_mixtral import MixtralSparseMoeBlock
from transformers.models.qwen3_moe.modeling_qwen3_moe import Qwen3MoeSparseMoeBlock
from transformers.models.qwen3.modeling_qwen3 import Qwen3Attention, Qwen3RotaryEmbedding

assert torch.__version__.startswith("2.9.0"), torch.__version__
assert transformers.__version__ == "5.23.0", transformers.__version__

OUT = Path(sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/parity")
GENERATOR = torch.Generator().manual_seed(47)


def randn(*shape, scale=1.0):
    return torch.randn(*shape, generator=GENERATOR) * scale


def randomize(module, scale=0.3):
    """Every parameter of the reference drawn from this script's seed, in state_dict order."""
    with torch.no_grad():
        for _, value in module.state_dict().items():
            value.copy_(randn(*value.shape, scale=scale))
    return module.eval()


def write(name, kind, config, params=None, inputs=None, outputs=None, compare=None, grads=None, seeds=None,
          atol=None, rtol=None):
    tensors = {}
    if seeds is not None:
        single = list(seeds) == ["output"]
        seeds = {"cotangent" if single else f"cotangent.{k}": v for k, v in seeds.items()}
    groups = (("param", params), ("input", inputs), ("output", outputs), ("compare", compare),
              ("grad", grads), ("input", seeds))
    for prefix, group in groups:
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


def with_gradients(module, inputs, run, zero=None, loss_on=None):
    """Runs `run(**inputs)` -> {output: tensor}; returns outputs, cotangents and gradients of
    L = sum(output * cotangent) over the outputs `loss_on` (default: all) with respect to every
    float input and every parameter. `zero` ([B, T], optional): rows of `output` whose cotangent is
    zero (all-masked queries, where the reference's output is not the project's)."""
    leaves = {k: v.clone().requires_grad_(v.is_floating_point()) for k, v in inputs.items()}
    outputs = run(**leaves)
    seeds = {k: randn(*v.shape) for k, v in outputs.items() if v.requires_grad and k in (loss_on or outputs)}
    if zero is not None:
        seeds["output"] = seeds["output"].masked_fill(zero.unsqueeze(-1), 0.0)
    loss = sum((outputs[k] * seed).sum() for k, seed in seeds.items())
    params = dict(module.named_parameters()) if module is not None else {}
    wrt = {k: v for k, v in leaves.items() if v.is_floating_point()}
    names = list(wrt) + list(params)
    grads = torch.autograd.grad(loss, [*wrt.values(), *params.values()])
    return outputs, seeds, dict(zip(names, grads))


def state(module):
    return {k: v for k, v in module.state_dict().items()}


# ---- RMSNorm ----
def rms_norms():
    hidden, eps = 11, 1e-6
    x = randn(2, 5, hidden, scale=2.0)
    for name, cls, kind in (("llama_rms_norm", LlamaRMSNorm, "LlamaRMSNorm"),
                            ("gemma2_rms_norm", Gemma2RMSNorm, "Gemma2RMSNorm")):
        module = randomize(cls(hidden, eps=eps))
        outputs, seeds, grads = with_gradients(
            module, {"hidden_states": x}, lambda hidden_states: {"output": module(hidden_states)})
        write(name, kind, {"hidden_size": hidden, "eps": eps, "unit_offset": kind == "Gemma2RMSNorm"},
              params=state(module), inputs={"hidden_states": x}, outputs=outputs, grads=grads, seeds=seeds)


# ---- gated feed-forward ----
def mlps():
    hidden, intermediate = 13, 29
    x = randn(2, 5, hidden)
    cases = (
        ("llama_mlp", "LlamaMLP", LlamaMLP, LlamaConfig, {"hidden_act": "silu", "mlp_bias": False}),
        ("llama_mlp_bias", "LlamaMLP", LlamaMLP, LlamaConfig, {"hidden_act": "silu", "mlp_bias": True}),
        ("gemma_mlp", "GemmaMLP", GemmaMLP, GemmaConfig, {"hidden_act": "gelu_pytorch_tanh"}),
    )
    for name, kind, cls, config_cls, extra in cases:
        config = config_cls(hidden_size=hidden, intermediate_size=intermediate, num_attention_heads=1,
                            num_key_value_heads=1, head_dim=2, **extra)
        module = randomize(cls(config))
        outputs, seeds, grads = with_gradients(module, {"x": x}, lambda x: {"output": module(x)})
        write(name, kind,
              {"hidden_size": hidden, "intermediate_size": intermediate, "hidden_act": config.hidden_act,
               "mlp_bias": extra.get("mlp_bias", False)},
              params=state(module), inputs={"x": x}, outputs=outputs, grads=grads, seeds=seeds)


# ---- RoPE and its scalings ----
def ropes():
    batch, heads, kv_heads, head_dim, theta = 2, 3, 1, 10, 10000.0
    cases = (
        # name, rope_parameters, max_position_embeddings, sequence length, first position
        ("rope_default", {"rope_type": "default"}, 64, 7, 3),
        ("rope_linear", {"rope_type": "linear", "factor": 4.0}, 64, 7, 5),
        # dynamic NTK at a length past the original 16 positions
        ("rope_dynamic", {"rope_type": "dynamic", "factor": 2.0}, 16, 37, 0),
        # YaRN's ramp over dimensions 1..4 of 5 (original 4096 positions), then DeepSeek's mscale
        # and an untruncated ramp (1.42..2.77)
        ("rope_yarn", {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096}, 16384, 9,
         20),
        ("rope_yarn_mscale", {"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 2048,
                              "beta_fast": 24.0, "beta_slow": 2.0, "mscale": 1.0, "mscale_all_dim": 0.8,
                              "truncate": False}, 16384, 9, 40),
        ("rope_llama3", {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                         "original_max_position_embeddings": 64}, 512, 9, 100),
    )
    for name, rope, max_positions, length, offset in cases:
        rope = {**rope, "rope_theta": theta}
        config = LlamaConfig(hidden_size=heads * (head_dim + 1), num_attention_heads=heads, head_dim=head_dim,
                             num_key_value_heads=kv_heads, max_position_embeddings=max_positions,
                             rope_parameters=rope)
        rotary_case(name, "LlamaRotaryEmbedding", LlamaRotaryEmbedding(config), apply_rotary_pos_emb,
                    {**rope, "head_dim": head_dim, "max_position_embeddings": max_positions},
                    (batch, heads, kv_heads, head_dim), length, offset)
    # Partial rotary: GPT-NeoX rotates the first int(12 * 0.4) = 4 features of each head.
    heads, head_dim, factor = 2, 12, 0.4
    rope = {"rope_type": "default", "rope_theta": theta, "partial_rotary_factor": factor}
    config = GPTNeoXConfig(hidden_size=heads * head_dim, num_attention_heads=heads, max_position_embeddings=64,
                           rope_parameters=rope)
    rotary_case("rope_partial", "GPTNeoXRotaryEmbedding", GPTNeoXRotaryEmbedding(config), neox_apply_rotary_pos_emb,
                {**rope, "head_dim": head_dim, "max_position_embeddings": 64},
                (batch, heads, heads, head_dim), 7, 2)


def rotary_case(name, kind, rotary, apply, config, shape, length, offset):
    batch, heads, kv_heads, head_dim = shape
    q = randn(batch, heads, length, head_dim)
    k = randn(batch, kv_heads, length, head_dim)
    position_ids = torch.arange(offset, offset + length).unsqueeze(0).expand(batch, length)

    def run(q, k):
        cos, sin = rotary(q, position_ids)
        q_embed, k_embed = apply(q, k, cos, sin)
        return {"q_embed": q_embed, "k_embed": k_embed}

    outputs, seeds, grads = with_gradients(None, {"q": q, "k": k}, run)
    outputs["inv_freq"] = rotary.inv_freq  # after the call: dynamic NTK has updated it
    outputs["attention_scaling"] = torch.tensor([rotary.attention_scaling], dtype=torch.float32)
    write(name, kind, config, inputs={"q": q, "k": k, "position_ids": position_ids.contiguous()},
          outputs=outputs, grads=grads, seeds=seeds)


# ---- attention modules ----
BATCH, LENGTH = 3, 9
# transformers' attention_mask (1 = token): row 0 whole, row 1 right-padded, row 2 left-padded (its
# first three queries see only padding under the causal mask: all-masked rows).
ATTENTION_MASK = torch.tensor([[1] * 9, [1] * 6 + [0] * 3, [0] * 3 + [1] * 6])
SHAPES = dict(hidden_size=20, num_attention_heads=4, num_key_value_heads=2, head_dim=6)  # d_head != 20 / 4


def attentions():
    common = dict(**SHAPES, max_position_embeddings=64, attn_implementation="eager")
    rope = {"rope_type": "default", "rope_theta": 10000.0}
    attention_case("qwen3_attention", "Qwen3Attention", Qwen3Config, Qwen3Attention, Qwen3RotaryEmbedding,
                   dict(common, rms_norm_eps=1e-6, rope_parameters=rope), layer_idx=0)
    attention_case("mistral_attention_sliding", "MistralAttention", MistralConfig, MistralAttention,
                   MistralRotaryEmbedding, dict(common, sliding_window=4, rope_parameters=rope), layer_idx=0)
    # A small cap and a larger query_pre_attn_scalar scale than 1/sqrt(d): the cap bites.
    gemma = dict(common, sliding_window=4, attn_logit_softcapping=2.0, query_pre_attn_scalar=3,
                 num_hidden_layers=2, layer_types=["sliding_attention", "full_attention"], rope_parameters=rope)
    for layer_idx, name in ((0, "gemma2_attention_sliding"), (1, "gemma2_attention_global")):
        attention_case(name, "Gemma2Attention", Gemma2Config, Gemma2Attention, Gemma2RotaryEmbedding, gemma,
                       layer_idx=layer_idx, weight_scale=0.6)
    # gpt-oss: biases, learned sinks, its default YaRN (factor 32, untruncated ramp), sliding and full layers.
    gpt_oss = dict(common, sliding_window=4, num_hidden_layers=2,
                   layer_types=["sliding_attention", "full_attention"])
    for layer_idx, name in ((0, "gpt_oss_attention_sliding"), (1, "gpt_oss_attention_global")):
        attention_case(name, "GptOssAttention", GptOssConfig, GptOssAttention, GptOssRotaryEmbedding, gpt_oss,
                       layer_idx=layer_idx)


def attention_case(name, kind, config_cls, cls, rotary_cls, settings, layer_idx, weight_scale=0.3):
    config = config_cls(**settings)
    assert config._attn_implementation == "eager"
    module = randomize(cls(config, layer_idx=layer_idx), scale=weight_scale)
    rotary = rotary_cls(config)
    x = randn(BATCH, LENGTH, config.hidden_size)
    position_ids = torch.arange(LENGTH).unsqueeze(0).expand(BATCH, LENGTH)
    cos, sin = rotary(x, position_ids)
    # Mistral reads its window from the config (every layer slides), the others per layer type.
    window = module.sliding_window if hasattr(module, "sliding_window") else config.sliding_window
    make_mask = create_causal_mask if window is None else create_sliding_window_causal_mask
    mask = make_mask(config=config, inputs_embeds=x, attention_mask=ATTENTION_MASK, past_key_values=None,
                     position_ids=position_ids)
    assert mask.shape == (BATCH, 1, LENGTH, LENGTH), mask.shape
    masked = mask[:, 0] == torch.finfo(mask.dtype).min  # [B, T, T], True = may not attend
    dead = masked.all(dim=-1)  # queries with every key masked
    assert dead.any(), "the fixture must have an all-masked row"

    def run(hidden_states):
        output, weights = module(hidden_states, position_embeddings=(cos, sin), attention_mask=mask)
        return {"output": output, "weights": weights}

    outputs, seeds, grads = with_gradients(module, {"hidden_states": x}, run, zero=dead, loss_on=("output",))
    # The project's convention on an all-masked row: zero context (so the output is o_proj's bias) and
    # zero weights. The eager reference averages every value there; gpt-oss's sink takes all the weight.
    sinks = hasattr(module, "sinks")
    compare = {}
    if not sinks:
        compare["output"] = (~dead).unsqueeze(-1).expand_as(outputs["output"]).to(torch.uint8)
        compare["weights"] = (~dead)[:, None, :, None].expand_as(outputs["weights"]).to(torch.uint8)
    layer_type = config.layer_types[layer_idx] if hasattr(config, "layer_types") else "full_attention"
    record = {k: getattr(config, k, None) for k in (
        "hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim", "max_position_embeddings", "rms_norm_eps",
        "attention_bias",
        "attn_logit_softcapping", "query_pre_attn_scalar")}
    record.update(layer_type=layer_type, sliding_window=window, scaling=module.scaling,
                  rope_parameters=config.rope_parameters, sinks=sinks,
                  qk_norm=hasattr(module, "q_norm"))
    write(name, kind, record, params=state(module),
          inputs={"hidden_states": x, "attention_mask": ATTENTION_MASK == 0, "mask": masked,
                  "position_ids": position_ids.contiguous()},
          outputs=outputs, compare=compare, grads=grads, seeds=seeds)


# ---- mixtures of experts ----
def moes():
    """The sparse MoE blocks, their fused expert tensors (`experts.gate_up_proj [E, 2I, D]`,
    `experts.down_proj [E, D, I]`) written per expert as checkpoints hold them
    (`experts.<e>.gate_proj.weight`, `up_proj`, `down_proj`, gradients likewise). The router's rows
    of experts 1 and 3 are equal, so their probabilities tie for every token: where they compete
    for the last place, torch.topk's choice is the one compared. Then DeepSeek-V3's block."""
    hidden, intermediate, experts, top_k = 12, 10, 5, 2
    x = randn(2, 7, hidden)
    cases = (
        ("mixtral_moe", "MixtralSparseMoeBlock", MixtralSparseMoeBlock,
         MixtralConfig(hidden_size=hidden, intermediate_size=intermediate, num_local_experts=experts,
                       num_experts_per_tok=top_k), True),
        ("qwen3_moe", "Qwen3MoeSparseMoeBlock", Qwen3MoeSparseMoeBlock,
         Qwen3MoeConfig(hidden_size=hidden, moe_intermediate_size=intermediate, num_experts=experts,
                        num_experts_per_tok=top_k, norm_topk_prob=False), False),
    )
    for name, kind, cls, config, renormalize in cases:
        config._experts_implementation = "eager"
        module = randomize(cls(config), scale=0.5)
        with torch.no_grad():
            module.gate.weight[3] = module.gate.weight[1]
        moe_case(name, kind, module, x, experts, top_k, intermediate,
                 {"hidden_size": hidden, "intermediate_size": intermediate, "num_experts": experts,
                  "num_experts_per_tok": top_k, "renormalize": renormalize, "hidden_act": "silu"},
                 lambda p: torch.softmax(p, dim=-1))
    # DeepSeek-V3: sigmoid scores, a random correction bias (a buffer: no gradient), 6 experts in
    # 3 groups of which 2 are searched, 2 per token, one shared expert, routed_scaling_factor 2.5.
    # Experts 1 and 3 (different groups) share a router row and a bias, so they tie where they compete.
    experts = 6
    config = DeepseekV3Config(hidden_size=hidden, moe_intermediate_size=intermediate, n_routed_experts=experts,
                              num_experts_per_tok=top_k, n_group=3, topk_group=2, n_shared_experts=1,
                              routed_scaling_factor=2.5, norm_topk_prob=True)
    config._experts_implementation = "eager"
    module = randomize(DeepseekV3MoE(config), scale=0.5)
    with torch.no_grad():
        module.gate.weight[3] = module.gate.weight[1]
        module.gate.e_score_correction_bias.copy_(randn(experts, scale=0.05))
        module.gate.e_score_correction_bias[3] = module.gate.e_score_correction_bias[1]
    moe_case("deepseek_v3_moe", "DeepseekV3MoE", module, x, experts, top_k, intermediate,
             {"hidden_size": hidden, "intermediate_size": intermediate, "num_experts": experts,
              "num_experts_per_tok": top_k, "renormalize": True, "hidden_act": "silu", "n_group": 3,
              "topk_group": 2, "n_shared_experts": 1, "routed_scaling_factor": 2.5},
             lambda p: torch.sigmoid(p) + module.gate.e_score_correction_bias)
    gpt_oss_moe()


def gpt_oss_moe():
    """gpt-oss's block (GptOssMLP): a router with a bias, the top-2 of 6 logits, softmax over those
    two; experts with biases whose fused `gate_up_proj [E, D, 2F]` (x @ W, not a Linear's [out, in])
    interleaves gate (even columns) and up (odd columns), the clamped SwiGLU
    `(clamp(up, -7, 7) + 1) * g * sigmoid(1.702 g)` with `g = clamp(gate, max=7)`, then
    `down_proj [E, F, D]`. The weights keep the checkpoint's fused names and layouts. Router rows
    (and biases) of experts 1 and 3 are equal, so their logits tie for every token; the inputs are
    large enough that the clamps bite."""
    hidden, intermediate, experts, top_k = 11, 9, 6, 2
    config = GptOssConfig(hidden_size=hidden, intermediate_size=intermediate, num_local_experts=experts,
                          num_experts_per_tok=top_k, num_attention_heads=1, num_key_value_heads=1, head_dim=2)
    config._experts_implementation = "eager"
    module = randomize(GptOssMLP(config), scale=0.5)
    with torch.no_grad():
        module.router.weight.mul_(0.3)  # router logits of unit order: the softmax over the two is not saturated
        module.router.weight[3] = module.router.weight[1]
        module.router.bias[3] = module.router.bias[1]
    x = randn(3, 7, hidden, scale=3.0)
    outputs, seeds, grads = with_gradients(
        module, {"hidden_states": x}, lambda hidden_states: {"output": module(hidden_states)[0]})
    with torch.no_grad():
        flat = x.reshape(-1, hidden)
        logits = torch.nn.functional.linear(flat, module.router.weight, module.router.bias)
        top = logits.topk(top_k + 1, dim=-1)
        tied = top.values[:, top_k - 1] == top.values[:, top_k]
        chosen = top.indices[tied, top_k - 1].tolist()
        gate_up = torch.einsum("nd,edf->nef", flat, module.experts.gate_up_proj) + module.experts.gate_up_proj_bias
        routed = gate_up[torch.arange(flat.shape[0])[:, None], top.indices[:, :top_k]]  # [N, k, 2F]
        gate, up = routed[..., ::2], routed[..., 1::2]
        limit = config.swiglu_limit
    print(f"gpt_oss_moe: {int(tied.sum())} of {flat.shape[0]} tokens tie for the last place (torch chose "
          f"{chosen}); routed units: gate > {limit} {int((gate > limit).sum())}, up > {limit} "
          f"{int((up > limit).sum())}, up < -{limit} {int((up < -limit).sum())} of {gate.numel()}")
    params = state(module)
    write("gpt_oss_moe", "GptOssMLP",
          {"hidden_size": hidden, "intermediate_size": intermediate, "num_experts": experts,
           "num_experts_per_tok": top_k, "alpha": config.swiglu_alpha, "limit": limit,
           "router": "softmax over the top-k of router.weight @ x + router.bias",
           "gate_up_layout": "interleaved: gate = gate_up[..., 0::2], up = gate_up[..., 1::2]",
           "weights": {k: list(v.shape) for k, v in params.items()}},
          params=params, inputs={"hidden_states": x}, outputs=outputs, grads=grads, seeds=seeds)


def moe_case(name, kind, module, x, experts, top_k, intermediate, config, choosing):
    """Writes one MoE fixture: outputs, gradients, the fused expert tensors split per expert;
    prints how many tokens tie for the last chosen place under `choosing` (router logits -> the
    scores the choice is made from)."""
    outputs, seeds, grads = with_gradients(
        module, {"hidden_states": x}, lambda hidden_states: {"output": module(hidden_states)})
    params = {k: v for k, v in module.state_dict().items() if not k.startswith("experts.")}
    gate_up, down = grads.pop("experts.gate_up_proj"), grads.pop("experts.down_proj")
    split = dict(grads)
    for e in range(experts):
        for part, weight, grad in (("gate_proj", module.experts.gate_up_proj[e, :intermediate],
                                    gate_up[e, :intermediate]),
                                   ("up_proj", module.experts.gate_up_proj[e, intermediate:],
                                    gate_up[e, intermediate:]),
                                   ("down_proj", module.experts.down_proj[e], down[e])):
            params[f"experts.{e}.{part}.weight"] = weight
            split[f"experts.{e}.{part}.weight"] = grad
    scores = choosing(x.reshape(-1, x.shape[-1]) @ module.gate.weight.T)
    top = scores.topk(top_k + 1, dim=-1).values
    ties = int((top[:, top_k - 1] == top[:, top_k]).sum())
    print(f"{name}: {ties} of {scores.shape[0]} tokens tie for the last place")
    write(name, kind, config, params=params, inputs={"hidden_states": x}, outputs=outputs, grads=split,
          seeds=seeds)


def main():
    torch.set_grad_enabled(True)
    rms_norms()
    mlps()
    ropes()
    attentions()
    moes()


if __name__ == "__main__":
    main()
