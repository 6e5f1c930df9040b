#!/usr/bin/env python3
"""A random-weight decoder LM shaped like SmolLM2-135M, for the language-model speed benchmark
(docs/MEASUREMENTS.md, "Language models"; issue 49).

    ~/.cache/attnzoo/ref-venv/bin/python scripts/gen_lm_bench_model.py OUT_DIR

Writes with `transformers`' `save_pretrained` into OUT_DIR a `LlamaForCausalLM` of SmolLM2-135M's
shape — hidden 576, intermediate 1,536, 30 layers, 9 heads of 64, 3 key/value heads, vocabulary
49,152, tied embeddings, rope_theta 100,000, max_position_embeddings 2,048, RMSNorm eps 1e-5 —
in float32 (~540 MB: not committed), its weights drawn by `transformers`' own initialisation
from seed 0. The benchmark feeds token ids (`examples/lm_speed.rs`, `scripts/bench_lm_torch.py`,
`attnzoo generate --prompt-ids`); the folder also gets a stand-in `tokenizer.json` (byte-fallback
BPE, SentencePiece style: `<unk> <s> </s>`, the 256 byte tokens, then filler pieces up to 49,152,
no merges), only so that llama.cpp's `convert_hf_to_gguf.py` accepts the folder (it reads a
vocabulary into the GGUF file). Needs torch 2.9.0, transformers 5.x and tokenizers.

    ~/.cache/attnzoo/ref-venv/bin/python scripts/gen_lm_bench_model.py --moe OUT_DIR

writes instead a `MixtralForCausalLM` of the same attention and width with 8 experts (2 per token,
each 1,536 wide) in each of 16 layers, ~1.4 GB in float32: the folder the loading-memory
measurement of a mixture of experts reads (docs/MEASUREMENTS.md, "Loading").
"""
import sys

import torch
from tokenizers import Tokenizer, decoders, models, normalizers
from transformers import LlamaConfig, LlamaForCausalLM, MixtralConfig, MixtralForCausalLM, PreTrainedTokenizerFast

VOCAB = 49152


def stand_in_tokenizer():
    """A Llama-style (SentencePiece, byte fallback) tokenizer with VOCAB pieces."""
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    vocab.update({f"<0x{byte:02X}>": 3 + byte for byte in range(256)})
    while len(vocab) < VOCAB:
        vocab[f"\u2581piece{len(vocab)}"] = len(vocab)
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<unk>", byte_fallback=True))
    tokenizer.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
    tokenizer.decoder = decoders.Sequence([
        decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0),
    ])
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="<unk>", bos_token="<s>", eos_token="</s>")


def main():
    args = sys.argv[1:]
    moe = args[:1] == ["--moe"]
    if moe:
        args = args[1:]
    if len(args) != 1:
        sys.exit("usage: gen_lm_bench_model.py [--moe] OUT_DIR")
    out = args[0]
    torch.manual_seed(0)
    shape = dict(
        vocab_size=49152,
        hidden_size=576,
        intermediate_size=1536,
        num_hidden_layers=30,
        num_attention_heads=9,
        num_key_value_heads=3,
        head_dim=64,
        hidden_act="silu",
        max_position_embeddings=2048,
        rms_norm_eps=1e-5,
        rope_parameters={"rope_type": "default", "rope_theta": 100000.0},
        tie_word_embeddings=True,
        bos_token_id=0,
        eos_token_id=0,
        pad_token_id=None,
        dtype="float32",
    )
    if moe:
        config = MixtralConfig(**{**shape, "num_hidden_layers": 16}, num_local_experts=8, num_experts_per_tok=2)
        model = MixtralForCausalLM(config)
    else:
        config = LlamaConfig(**shape, attention_bias=False, mlp_bias=False)
        model = LlamaForCausalLM(config)
    model = model.to(torch.float32).eval()
    model.save_pretrained(out)
    stand_in_tokenizer().save_pretrained(out)
    parameters = sum(p.numel() for p in model.parameters())
    print(f"{out}: {parameters:,} parameters ({parameters * 4 / 1e6:.0f} MB in float32)")


if __name__ == "__main__":
    main()
