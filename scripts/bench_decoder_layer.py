#!/usr/bin/env python3
"""PyTorch side of the Llama-style decoder layer timing (docs/MEASUREMENTS.md, "A Llama-style
decoder layer"): `transformers`' `LlamaDecoderLayer` (RMSNorm, grouped-query attention 8/2 heads
with RoPE, SwiGLU) at d_model 512, batch 4, T 1,024, causal, as
`cargo run --release --example decoder_layer` builds it from attnzoo's modules.

    python3 scripts/bench_decoder_layer.py [--threads 2] [--passes 30]

Each pass timed alone: forward (inference mode), then forward + backward of the sum (training
mode, dropout 0); prints the fastest and the median, as the Rust example does. The rotary
cos/sin tables are computed inside each pass, as attnzoo computes them in each forward. Needs
torch 2.9.0 and transformers 5.x.
"""
import argparse

import torch
from transformers import LlamaConfig
from transformers.models.llama.modeling_llama import LlamaDecoderLayer, LlamaRotaryEmbedding

from bench_torch import min_median_ms

BATCH, LEN, D_MODEL, HEADS, KV_HEADS, D_FF = 4, 1024, 512, 8, 2, 1408


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--passes", type=int, default=30)
    args = parser.parse_args()
    if args.threads < 1 or args.passes < 1:
        parser.error("--threads and --passes must be at least 1")
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    config = LlamaConfig(
        hidden_size=D_MODEL,
        num_attention_heads=HEADS,
        num_key_value_heads=KV_HEADS,
        intermediate_size=D_FF,
        rms_norm_eps=1e-6,
        attention_dropout=0.0,
    )
    config._attn_implementation = "sdpa"
    layer = LlamaDecoderLayer(config, layer_idx=0)
    rotary = LlamaRotaryEmbedding(config)
    x = torch.randn(BATCH, LEN, D_MODEL)
    positions = torch.arange(LEN).unsqueeze(0)

    def forward():
        cos_sin = rotary(x, positions)
        # No attention mask: SDPA's own causal kernel, as attnzoo's fused causal path.
        return layer(x, attention_mask=None, position_ids=positions, position_embeddings=cos_sin)

    layer.eval()
    with torch.inference_mode():
        low, median = min_median_ms(forward, args.passes, warmup=3)
    print(f"torch llama_layer forward: min {low:.2f} ms, median {median:.2f} ms over {args.passes} passes")

    layer.train()
    x.requires_grad_(True)

    def forward_backward():
        layer.zero_grad(set_to_none=True)
        x.grad = None
        forward().sum().backward()

    low, median = min_median_ms(forward_backward, args.passes, warmup=3)
    print(f"torch llama_layer forward+backward: min {low:.2f} ms, median {median:.2f} ms over {args.passes} passes")
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")


if __name__ == "__main__":
    main()
