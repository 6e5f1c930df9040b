#!/usr/bin/env python3
"""Tiny random-weight decoder LMs saved with transformers' `save_pretrained`, and their reference
outputs, for tests/lm.rs (issue 49).

Run with the reference venv (torch 2.9.0, transformers 5.x):

    ~/.cache/attnzoo/ref-venv/bin/python scripts/gen_lm_fixtures.py [OUT_DIR] [--case NAME ...]

OUT_DIR defaults to tests/fixtures/lm; `--case` (repeatable) writes only the named cases (each
case's seeds depend on its place in the full list, so one case alone comes out the same). Each
case is a folder <name>/ with what a Hugging Face checkpoint has (config.json,
generation_config.json, model.safetensors or shards and their index, for some tokenizer.json and
tokenizer_config.json) and:

- reference.safetensors: `input_ids` [B, T] (int64, left-padded with 0), `attention_mask` [B, T]
  (int64, 1 = token), `logits` [B, T, vocab] (float32) of one forward pass over that padded batch
  with position ids 0..T for every row (attnzoo's convention; RoPE is relative, so the real
  tokens' logits are those of the unpadded rows);
- reference.json: `prompt` (ids), `greedy` (the ids `generate` returns, greedy, at most 32 new
  tokens, stopping at generation_config's EOS), `min_greedy_margin` (the smallest gap between the
  best and second-best logit over those steps: the test's exact match is meaningful only if it is
  well above the 1e-4 tolerance), and for a folder with a tokenizer `prompt_text`,
  `greedy_text`, and with a chat template `chat_prompt` (apply_chat_template's text).

The weights are drawn with larger variances than transformers' init (std 1/sqrt(fan_in)) so that
logits spread out and soft-caps and windows matter; the models are reloaded from disk in float32
before the references are computed, so a bf16 folder is compared at its rounded weights.
"""

import argparse
import json
import math
import os
import shutil

import torch
from safetensors.torch import save_file
from tokenizers import Tokenizer, decoders, models, processors
from transformers import (
    AutoModelForCausalLM,
    DeepseekV3Config,
    Gemma2Config,
    Gemma3TextConfig,
    GenerationConfig,
    GptOssConfig,
    LlamaConfig,
    MistralConfig,
    MixtralConfig,
    Olmo2Config,
    Phi3Config,
    PreTrainedTokenizerFast,
    Qwen2Config,
    Qwen3Config,
    Qwen3MoeConfig,
    SmolLM3Config,
)

DEFAULT_OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "lm")
VOCAB = 67
NEW_TOKENS = 32
CHARS = " abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.,!?'<>|"
EOS = 2
EAGER = dict(attn_implementation="eager", experts_implementation="eager")

common = dict(
    vocab_size=VOCAB,
    num_hidden_layers=2,
    rms_norm_eps=1e-5,
    bos_token_id=1,
    eos_token_id=EOS,
    pad_token_id=0,
)


def cases():
    rope = lambda kind, **extra: {"rope_type": kind, "rope_theta": 10000.0, **extra}
    # DeepSeek-V3 with experts (the `deepseek_v3_moe` and `deepseek_v3_yarn` cases).
    deepseek_moe = dict(hidden_size=32, intermediate_size=40, moe_intermediate_size=10, num_attention_heads=4,
                        num_key_value_heads=4, n_routed_experts=6, n_shared_experts=1, num_experts_per_tok=2,
                        n_group=3, topk_group=2, first_k_dense_replace=1, routed_scaling_factor=2.5,
                        kv_lora_rank=8, q_lora_rank=12, qk_nope_head_dim=6, v_head_dim=5,
                        max_position_embeddings=64, **{**common, "num_hidden_layers": 3})
    return [
        # name, config, options
        ("llama", LlamaConfig(hidden_size=36, intermediate_size=50, num_attention_heads=6,
                              num_key_value_heads=2, max_position_embeddings=64,
                              rope_parameters=rope("default"), **common), {"tokenizer": True}),
        ("llama_linear", LlamaConfig(hidden_size=32, intermediate_size=44, num_attention_heads=4,
                                     num_key_value_heads=4, max_position_embeddings=64, attention_bias=True,
                                     mlp_bias=True, rope_parameters=rope("linear", factor=2.5),
                                     tie_word_embeddings=True, **common), {"v4_config": True}),
        ("llama_dynamic", LlamaConfig(hidden_size=32, intermediate_size=40, num_attention_heads=4,
                                      num_key_value_heads=2, max_position_embeddings=16,
                                      rope_parameters=rope("dynamic", factor=3.0), **common),
         {"batch_len": 22, "prompt_len": 12}),
        ("llama_yarn", LlamaConfig(hidden_size=32, intermediate_size=40, num_attention_heads=4,
                                   num_key_value_heads=2, max_position_embeddings=64,
                                   rope_parameters=rope("yarn", factor=4.0, original_max_position_embeddings=16),
                                   **common), {"dtype": torch.bfloat16}),
        ("llama3", LlamaConfig(hidden_size=32, intermediate_size=40, num_attention_heads=2,
                               num_key_value_heads=1, max_position_embeddings=64,
                               rope_parameters=rope("llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                                                    original_max_position_embeddings=16),
                               **common), {"shard": "12KB"}),
        ("mistral", MistralConfig(hidden_size=32, intermediate_size=40, num_attention_heads=4,
                                  num_key_value_heads=2, max_position_embeddings=64, sliding_window=4,
                                  rope_parameters=rope("default"), **common), {"dtype": torch.float16}),
        ("qwen2", Qwen2Config(hidden_size=40, intermediate_size=40, num_attention_heads=4,
                              num_key_value_heads=2, max_position_embeddings=64, tie_word_embeddings=True,
                              rope_parameters=rope("default", rope_theta=1000000.0), **common),
         {"tokenizer": True, "chat": True}),
        ("qwen3", Qwen3Config(hidden_size=24, intermediate_size=40, num_attention_heads=4, head_dim=10,
                              num_key_value_heads=2, max_position_embeddings=64,
                              rope_parameters=rope("default"), **common), {}),
        ("gemma2", Gemma2Config(hidden_size=32, intermediate_size=44, num_attention_heads=4, head_dim=12,
                                num_key_value_heads=2, max_position_embeddings=64, sliding_window=5,
                                query_pre_attn_scalar=20, attn_logit_softcapping=3.0,
                                final_logit_softcapping=4.0, rope_parameters=rope("default"), **common), {}),
        ("deepseek_v3", DeepseekV3Config(hidden_size=32, intermediate_size=40, moe_intermediate_size=8,
                                         num_attention_heads=4, num_key_value_heads=4, n_routed_experts=4,
                                         n_shared_experts=1, num_experts_per_tok=2, n_group=1, topk_group=1,
                                         first_k_dense_replace=2, kv_lora_rank=8, q_lora_rank=12,
                                         qk_nope_head_dim=6, qk_rope_head_dim=4, v_head_dim=5,
                                         max_position_embeddings=64, rope_parameters=rope("default"),
                                         **common), {}),
        # Gemma 3 (text): QK-norm, 7 layers so that the default pattern (every 6th layer global)
        # gives sliding layers on both sides of a global one, a window shorter than the prompts,
        # one RoPE base per layer type (5.x's rope_parameters keyed by layer type), a
        # query_pre_attn_scalar other than head_dim, and no soft-caps (Gemma 3's default). Untied:
        # with tied embeddings (and no final soft-cap) these random weights only ever repeat the
        # last prompt token, which would make the greedy comparison say little.
        ("gemma3", Gemma3TextConfig(hidden_size=36, intermediate_size=46, num_attention_heads=4, head_dim=10,
                                    num_key_value_heads=2, max_position_embeddings=64, sliding_window=5,
                                    query_pre_attn_scalar=24, tie_word_embeddings=False,
                                    rope_parameters={"full_attention": rope("default", rope_theta=100000.0),
                                                     "sliding_attention": rope("default", rope_theta=1000.0)},
                                    **{**common, "num_hidden_layers": 7}), {"tokenizer": True}),
        # Mixtral: 5 experts, 2 per token (renormalised), a window shorter than the prompts.
        ("mixtral", MixtralConfig(hidden_size=32, intermediate_size=18, num_attention_heads=4,
                                  num_key_value_heads=2, num_local_experts=5, num_experts_per_tok=2,
                                  max_position_embeddings=64, sliding_window=5,
                                  rope_parameters=rope("default", rope_theta=1000000.0), **common), {}),
        # Qwen3-MoE: QK-norm, head_dim 10, 6 experts, 2 per token without renormalising
        # (norm_topk_prob false), layer 1 dense (mlp_only_layers) between two expert layers.
        ("qwen3_moe", Qwen3MoeConfig(hidden_size=24, intermediate_size=30, moe_intermediate_size=14,
                                     num_attention_heads=4, head_dim=10, num_key_value_heads=2,
                                     num_experts=6, num_experts_per_tok=2, norm_topk_prob=False,
                                     decoder_sparse_step=1, mlp_only_layers=[1], max_position_embeddings=64,
                                     rope_parameters=rope("default"), **{**common, "num_hidden_layers": 3}),
         {}),
        # DeepSeek-V3 with its experts: layer 0 dense (first_k_dense_replace), layers 1-2 a
        # mixture of 6 experts in 3 groups (2 searched), 2 per token, one shared expert,
        # routed_scaling_factor 2.5, a random e_score_correction_bias.
        ("deepseek_v3_moe", DeepseekV3Config(**deepseek_moe, qk_rope_head_dim=4, rope_parameters=rope("default")),
         {}),
        # SmolLM3: every second layer without RoPE (no_rope_layer_interval 2), and those layers
        # sliding (use_sliding_window, a window shorter than the prompts).
        ("smollm3", SmolLM3Config(hidden_size=32, intermediate_size=40, num_attention_heads=4,
                                  num_key_value_heads=2, max_position_embeddings=64, no_rope_layer_interval=2,
                                  use_sliding_window=True, sliding_window=5, rope_parameters=rope("default"),
                                  **{**common, "num_hidden_layers": 4}), {}),
        # OLMo 2: no pre-norms; RMSNorm on the attention and MLP outputs before the residual add, and
        # QK-norm over the whole width of q (heads * head_dim) and of k (kv_heads * head_dim) before
        # the split into heads.
        ("olmo2", Olmo2Config(hidden_size=32, intermediate_size=40, num_attention_heads=4, num_key_value_heads=2,
                              max_position_embeddings=64, rope_parameters=rope("default"), **common), {}),
        # Phi-3: fused qkv_proj and gate_up_proj, LongRoPE over the first 0.8 of each head (4 pairs of
        # 10 features) with distinct short and long factors, original_max_position_embeddings 16 of
        # 64 (attention_factor sqrt(1 + ln 4 / ln 16)): the padded batch (22 positions) takes the long
        # factors, and greedy generation (9 + 32 tokens) crosses 16, where generate() recomputes the
        # whole sequence with the long factors.
        ("phi3", Phi3Config(hidden_size=40, intermediate_size=44, num_attention_heads=4, num_key_value_heads=2,
                            max_position_embeddings=64, original_max_position_embeddings=16,
                            rope_parameters=rope("longrope", partial_rotary_factor=0.8,
                                                 short_factor=[1.0, 1.5, 2.2, 3.0],
                                                 long_factor=[2.0, 3.5, 5.0, 8.0]),
                            **{**common, "num_hidden_layers": 4}), {"batch_len": 22}),
        # gpt-oss: attention biases and learned sinks, sliding (window 5) and full layers alternating,
        # head_dim 14 (not hidden / heads), YaRN untruncated with a ramp that blends one frequency,
        # 5 experts (fused, interleaved gate/up, biases), 2 per token (softmax over the two logits),
        # the clamped SwiGLU (alpha 1.702, limit 7) with gate/up values past the limit.
        ("gpt_oss", GptOssConfig(hidden_size=36, intermediate_size=14, num_attention_heads=4, num_key_value_heads=2,
                                 head_dim=14, num_local_experts=5, num_experts_per_tok=2, sliding_window=5,
                                 layer_types=["sliding_attention", "full_attention"] * 2,
                                 max_position_embeddings=128,
                                 rope_parameters=rope("yarn", factor=4.0, beta_fast=32.0, beta_slow=1.0,
                                                      truncate=False, original_max_position_embeddings=32),
                                 **{**common, "num_hidden_layers": 4}), {}),
        # DeepSeek-V3 with experts and YaRN over qk_rope_head_dim 6 (factor 4 of 16 positions,
        # mscale 1 and mscale_all_dim 0.707: the softmax scale gains mscale(4, 0.707)^2 and the
        # cos/sin the ratio mscale(4, 1) / mscale(4, 0.707)).
        ("deepseek_v3_yarn", DeepseekV3Config(**deepseek_moe, qk_rope_head_dim=6,
                                              rope_parameters=rope("yarn", factor=4.0, original_max_position_embeddings=16,
                                                                   mscale=1.0, mscale_all_dim=0.707)),
         {"batch_len": 22}),
    ]


def randomise(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if isinstance(model.config, GptOssConfig) and name.endswith("sinks"):
                p.copy_(torch.randn(p.shape, generator=g))
            elif isinstance(model.config, GptOssConfig) and name.endswith("_bias"):
                # the experts' biases [E, 2F] and [E, D]
                p.copy_(0.2 * torch.randn(p.shape, generator=g))
            elif isinstance(model.config, GptOssConfig) and p.dim() == 3:
                # the experts' [E, in, out] (gate_up_proj [E, D, 2F], down_proj [E, F, D]); gate_up_proj
                # with 3x the standard deviation so that some gate/up values pass the SwiGLU limit (7)
                gain = 3.0 if name.endswith("gate_up_proj") else 1.0
                p.copy_(gain * torch.randn(p.shape, generator=g) / math.sqrt(p.shape[1]))
            elif p.dim() == 1 and ("norm" in name):
                base = 0.0 if isinstance(model.config, (Gemma2Config, Gemma3TextConfig)) else 1.0
                p.copy_(base + 0.2 * torch.randn(p.shape, generator=g))
            elif p.dim() == 1:
                p.copy_(0.2 * torch.randn(p.shape, generator=g))
            elif "embed_tokens" in name:
                p.copy_(torch.randn(p.shape, generator=g))
            else:
                p.copy_(torch.randn(p.shape, generator=g) / math.sqrt(p.shape[-1]))
        for name, b in model.named_buffers():
            if name.endswith("e_score_correction_bias"):
                b.copy_(0.05 * torch.randn(b.shape, generator=g))


def tokenizer(folder, chat):
    vocab = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3}
    for c in CHARS:
        vocab.setdefault(c, len(vocab))
    assert len(vocab) <= VOCAB, len(vocab)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<unk>"))
    tok.decoder = decoders.Fuse()
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                                   pad_token="<pad>", unk_token="<unk>")
    if chat:
        fast.chat_template = (
            "{% for message in messages %}<|{{ message['role'] }}|>{{ message['content'] | trim }}"
            "{% if not loop.last %} {% endif %}{% endfor %}"
            "{% if add_generation_prompt %}<|assistant|>{% endif %}"
        )
    fast.save_pretrained(folder)
    return fast


def to_v4(folder):
    """Rewrites config.json as transformers 4.x wrote it: rope_theta and rope_scaling."""
    path = os.path.join(folder, "config.json")
    config = json.load(open(path))
    params = config.pop("rope_parameters")
    config["rope_theta"] = params.pop("rope_theta")
    params["type"] = params.pop("rope_type")
    config["rope_scaling"] = params
    json.dump(config, open(path, "w"), indent=2, sort_keys=True)


def greedy(model, prompt):
    ids = torch.tensor([prompt])
    out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=NEW_TOKENS, do_sample=False,
                         output_scores=True, return_dict_in_generate=True, eos_token_id=EOS, pad_token_id=0)
    new = out.sequences[0, len(prompt):].tolist()
    margin = min(float(s[0].topk(2).values[0] - s[0].topk(2).values[1]) for s in out.scores)
    return new, margin


def main():
    all_cases = cases()
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", nargs="?", default=DEFAULT_OUT, metavar="OUT_DIR")
    parser.add_argument("--case", action="append", choices=[name for name, _, _ in all_cases],
                        help="write only this case (repeatable; default: all)")
    args = parser.parse_args()
    OUT = args.out
    os.makedirs(OUT, exist_ok=True)
    for index, (name, config, options) in enumerate(all_cases):
        if args.case and name not in args.case:
            continue
        folder = os.path.join(OUT, name)
        shutil.rmtree(folder, ignore_errors=True)
        config._attn_implementation = "eager"
        torch.manual_seed(index)
        # `eager` experts too: the modeling file's own loop over the chosen experts (the default,
        # torch's grouped_mm, wants 16-byte-aligned strides these odd widths do not have).
        model = AutoModelForCausalLM.from_config(config, **EAGER)
        # The best of a few draws: the one whose greedy steps are farthest from a tie.
        best = None
        for attempt in range(8):
            randomise(model, 1000 * index + attempt)
            prompt = [1] + [int(i) for i in torch.randint(4, VOCAB, (options.get("prompt_len", 9) - 1,),
                                                             generator=torch.Generator().manual_seed(attempt))]
            model.eval()
            new, margin = greedy(model, prompt)
            score = (len(new) == NEW_TOKENS, margin)
            if best is None or score > best[0]:
                best = (score, attempt)
            if score > (True, 1e-2):
                break
        randomise(model, 1000 * index + best[1])
        model.to(options.get("dtype", torch.float32))
        model.generation_config = GenerationConfig(bos_token_id=1, eos_token_id=[EOS], pad_token_id=0,
                                                   do_sample=False)
        save = {"max_shard_size": options["shard"]} if "shard" in options else {}
        model.save_pretrained(folder, **save)
        fast = tokenizer(folder, options.get("chat")) if options.get("tokenizer") else None

        model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, **EAGER)
        model.eval()
        reference = {}
        if fast is not None:
            text = "the cat sat on a mat."
            prompt = fast(text)["input_ids"]
            reference["prompt_text"] = text
        else:
            g = torch.Generator().manual_seed(best[1])
            prompt = [1] + [int(i) for i in torch.randint(4, VOCAB, (options.get("prompt_len", 9) - 1,), generator=g)]
        new, margin = greedy(model, prompt)
        reference.update(prompt=prompt, greedy=new, min_greedy_margin=margin)
        if fast is not None:
            reference["greedy_text"] = fast.decode(new, skip_special_tokens=True)
            if options.get("chat"):
                reference["chat_prompt"] = fast.apply_chat_template(
                    [{"role": "user", "content": "the cat sat"}], add_generation_prompt=True, tokenize=False)

        # A left-padded batch: lengths T, T - 4, 3.
        T = options.get("batch_len", 11)
        g = torch.Generator().manual_seed(7 + index)
        lengths = [T, T - 4, 3]
        input_ids = torch.zeros(len(lengths), T, dtype=torch.int64)
        mask = torch.zeros(len(lengths), T, dtype=torch.int64)
        for row, n in enumerate(lengths):
            input_ids[row, T - n:] = torch.randint(3, VOCAB, (n,), generator=g)
            mask[row, T - n:] = 1
        positions = torch.arange(T).unsqueeze(0).expand(len(lengths), T)
        # A fresh model: dynamic NTK's frequencies are state that generate() left grown.
        model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, **EAGER)
        model.eval()
        with torch.no_grad():
            logits = model(input_ids=input_ids, attention_mask=mask, position_ids=positions).logits.float()
        save_file({"input_ids": input_ids, "attention_mask": mask, "logits": logits.contiguous()},
                  os.path.join(folder, "reference.safetensors"))
        if options.get("v4_config"):
            to_v4(folder)
        json.dump(reference, open(os.path.join(folder, "reference.json"), "w"), indent=1)
        size = sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder))
        print(f"{name}: {size // 1024} KiB, greedy {len(new)} tokens, margin {margin:.4f}, files {sorted(os.listdir(folder))}")


if __name__ == "__main__":
    main()
