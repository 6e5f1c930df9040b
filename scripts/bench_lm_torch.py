#!/usr/bin/env python3
"""PyTorch side of the language-model speed benchmark (docs/MEASUREMENTS.md, "Language models"):
`transformers`' eager PyTorch on the folder `examples/lm_speed.rs` loads, with the same prompt ids.

    python3 scripts/bench_lm_torch.py --model-dir DIR [--batch 1 --batch 8] [--rounds 3] [--threads 2]

Per round and batch size `B`, as the Rust example measures them:
- **prefill**: one forward of the `[B, 512]` prompt into a fresh cache, logits of the last
  position only (`logits_to_keep=1`, what `generate` asks for), `tokens/s = B · 512 / time`;
- **decode**: `model.generate(max_new_tokens=128, min_new_tokens=128, do_sample=False)` on the
  same prompt, timed from the first call of a logits processor (the prompt's forward done) to
  its return: the 127 single-token steps after the prefill, `tokens/s = B · 127 / time`.
Prompt row `b`, position `i` holds id `(1 + 7919 · (512 b + i)) mod vocab`. Attention is the
model's default implementation (SDPA). One short untimed generation first. Prints one JSON
object per measurement and round, then with more than one round a min/median/max line per
measurement. Needs torch 2.9.0 and transformers 5.x.
"""
import argparse
import json
import time

import torch
from transformers import AutoModelForCausalLM, LogitsProcessor, LogitsProcessorList


class FirstCall(LogitsProcessor):
    """Records when `generate` first chooses a token: its prefill forward is done."""

    def __init__(self):
        self.at = None

    def __call__(self, input_ids, scores):
        if self.at is None:
            self.at = time.perf_counter()
        return scores


def prompt(batch, length, vocab):
    ids = [[(1 + 7919 * (row * length + i)) % vocab for i in range(length)] for row in range(batch)]
    return torch.tensor(ids, dtype=torch.long)


def measure(model, batch, length, new_tokens):
    ids = prompt(batch, length, model.config.vocab_size)
    mask = torch.ones_like(ids)
    start = time.perf_counter()
    model(input_ids=ids, attention_mask=mask, use_cache=True, logits_to_keep=1)
    prefill = time.perf_counter() - start
    first = FirstCall()
    start = time.perf_counter()
    out = model.generate(
        input_ids=ids,
        attention_mask=mask,
        max_new_tokens=new_tokens,
        min_new_tokens=new_tokens,
        do_sample=False,
        pad_token_id=0,
        logits_processor=LogitsProcessorList([first]),
    )
    end = time.perf_counter()
    assert out.shape == (batch, length + new_tokens), out.shape
    return prefill, end - first.at, first.at - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model-dir", required=True)
    parser.add_argument("--batch", type=int, action="append", dest="batches")
    parser.add_argument("--prompt-len", type=int, default=512)
    parser.add_argument("--new-tokens", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    batches = args.batches or [1, 8]
    if args.threads < 1 or args.rounds < 1 or args.prompt_len < 1 or args.new_tokens < 2 or min(batches) < 1:
        parser.error("--threads, --rounds, --prompt-len, --batch must be at least 1, --new-tokens at least 2")
    torch.set_num_threads(args.threads)
    loading = time.perf_counter()
    model = AutoModelForCausalLM.from_pretrained(args.model_dir, dtype=torch.float32).eval()
    print(f"bench_lm_torch: loaded in {time.perf_counter() - loading:.1f} s, attention "
          f"{model.config._attn_implementation}, torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads", flush=True)
    rates = {}
    with torch.inference_mode():
        for batch in batches:
            measure(model, batch, 16, 3)
        for batch in batches:
            for r in range(args.rounds):
                prefill, decode, in_generate = measure(model, batch, args.prompt_len, args.new_tokens)
                for phase, tokens, seconds in (
                    ("prefill", batch * args.prompt_len, prefill),
                    ("decode", batch * (args.new_tokens - 1), decode),
                ):
                    rates.setdefault((batch, phase), []).append(tokens / seconds)
                    print(json.dumps({
                        "engine": "transformers", "backend": "torch", "batch": batch, "phase": phase,
                        "round": r, "tokens": tokens, "seconds": round(seconds, 4),
                        "tok_s": round(tokens / seconds, 2),
                        **({"prefill_in_generate_s": round(in_generate, 4)} if phase == "decode" else {}),
                    }), flush=True)
    if args.rounds > 1:
        for (batch, phase), values in rates.items():
            values.sort()
            print(f"transformers batch {batch} {phase}: min {values[0]:.1f}, median "
                  f"{values[len(values) // 2]:.1f}, max {values[-1]:.1f} tokens/s over {args.rounds} rounds")


if __name__ == "__main__":
    main()
