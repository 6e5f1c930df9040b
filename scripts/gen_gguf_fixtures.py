#!/usr/bin/env python3
"""Tiny GGUF decoder LMs converted with llama.cpp's `convert_hf_to_gguf.py` from the Hugging Face
fixtures in tests/fixtures/lm/, and reference outputs computed by transformers from the GGUF files.

Run with the reference venv (torch 2.9.0, transformers 5.23.0, gguf 0.19.0, sentencepiece):

    ~/.cache/attnzoo/ref-venv/bin/python scripts/gen_gguf_fixtures.py [--llama-cpp DIR] [OUT_DIR]

DIR (default ~/.cache/attnzoo/llama.cpp, or $LLAMA_CPP) is a llama.cpp source tree; its
convert_hf_to_gguf.py is run with this same Python and uses the tree's own gguf-py. OUT_DIR
defaults to tests/fixtures/gguf. For each case it writes:

- `<name>.gguf`: the converted file;
- `<name>.reference.json`: `prompt` (12 ids), `logits` (last position, full vocab), `all_logits`
  ([T][vocab], every prompt position), `greedy` (16 new ids, argmax of a full forward pass at each
  step, no EOS stop) and `min_greedy_margin` (smallest best minus second-best logit over those 16
  steps), plus how it was made: versions, the converter command, the config transformers used and
  where it came from, notes, and the largest |difference| from the same model loaded from the
  safetensors folder (`max_abs_diff_vs_safetensors`; for a q8_0 file this is the quantization
  error).

How each source folder is prepared (in a temporary copy; the fixtures themselves are untouched):

- only config.json, generation_config.json and model.safetensors are copied; a SentencePiece
  `tokenizer.model` is written (67 pieces = vocab_size: <pad> 0, <s> 1, </s> 2, <unk> 3, then the
  61 characters of scripts/gen_lm_fixtures.py's tokenizer with ' ' as U+2581, so the ids are the
  tokenizer.json ones of the llama / qwen2 fixtures, then two merges). SentencePiece is what
  Gemma2's converter requires, and with it every architecture converts without patching the
  converter (the BPE tokenizer.json route needs its pre-tokenizer hash to be one llama.cpp knows).
  The GGUFs therefore carry `tokenizer.ggml.model = "llama"`.
- gemma2: `query_pre_attn_scalar` is set to head_dim (12; the fixture has 20). GGUF has no key for
  it: llama.cpp scales queries by 1/sqrt(attention.key_length) (1/sqrt(n_embd/n_head) for the
  46-layer 27B), so a file cannot express 20.
- mistral: `sliding_window` (4 in the fixture) is dropped. MistralForCausalLM converts to
  architecture `llama`, which writes no window and which llama.cpp runs without one.

Transformers (5.23.0) builds the config from the GGUF metadata with a per-architecture key table
that misses some keys (qwen3: attention.key_length; gemma2: the soft-cap keys and the query
scale). Where the config it builds differs from the prepared config.json in a field that matters,
the model is loaded again from the same GGUF with `config=` the prepared config (the tensors still
come through transformers' GGUF loader: dequantization, Q/K un-permutation, Gemma's norm - 1);
`config_source` says which was used and `gguf_config_mismatches` lists the differences.
"""

import argparse
import importlib.metadata
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

import torch
from gguf import GGUFReader
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LM = os.path.join(ROOT, "tests", "fixtures", "lm")
CHARS = " abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.,!?'<>|"
PROMPT_LEN = 12
NEW_TOKENS = 16
TEXT = "the cat sat on a mat."
EOS = 2

# name, source fixture, --outtype, config.json overrides, notes
CASES = [
    ("llama", "llama", "f32", {}, []),
    ("mistral", "mistral", "f32", {"sliding_window": None},
     ["sliding_window=4 dropped: MistralForCausalLM converts to GGUF architecture 'llama', which has no "
      "sliding-window key and runs without a window in llama.cpp"]),
    ("mistral_q8_0", "mistral", "q8_0", {"sliding_window": None},
     ["sliding_window=4 dropped (see mistral)",
      "q8_0 stands in for llama_q8_0: the llama fixture's widths (hidden 36, intermediate 50) are not multiples "
      "of 32, so every matrix would fall back to F16; here matrices with 32 inputs are Q8_0, ffn_down (40 inputs) "
      "falls back to F16, norms stay F32"]),
    ("qwen2", "qwen2", "f32", {}, []),
    ("qwen3", "qwen3", "f32", {}, []),
    ("gemma2", "gemma2", "f32", {"query_pre_attn_scalar": 12},
     ["query_pre_attn_scalar set to head_dim=12 (fixture: 20): GGUF has no key for it, llama.cpp scales "
      "queries by 1/sqrt(gemma2.attention.key_length)"]),
]

# Config fields whose value changes the forward pass, compared between the GGUF-derived config and
# the prepared config.json.
FIELDS = ["vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
          "num_key_value_heads", "head_dim", "rms_norm_eps", "tie_word_embeddings", "attention_bias",
          "mlp_bias", "attn_logit_softcapping", "final_logit_softcapping", "query_pre_attn_scalar",
          "sliding_window", "layer_types", "hidden_act", "hidden_activation"]


def sentencepiece_model(path):
    from sentencepiece import sentencepiece_model_pb2 as pb

    m = pb.ModelProto()
    t = m.trainer_spec
    t.model_type = pb.TrainerSpec.BPE
    t.vocab_size = 67
    t.pad_id, t.bos_id, t.eos_id, t.unk_id = 0, 1, 2, 3
    t.byte_fallback = False
    n = m.normalizer_spec
    n.name = "identity"
    n.add_dummy_prefix = False
    n.remove_extra_whitespaces = False
    n.escape_whitespaces = True
    Piece = pb.ModelProto.SentencePiece
    for text, kind in [("<pad>", Piece.CONTROL), ("<s>", Piece.CONTROL), ("</s>", Piece.CONTROL),
                       ("<unk>", Piece.UNKNOWN)]:
        m.pieces.add(piece=text, score=0.0, type=kind)
    for i, c in enumerate(CHARS):
        m.pieces.add(piece="\u2581" if c == " " else c, score=-1.0 - i, type=Piece.NORMAL)
    m.pieces.add(piece="th", score=0.5, type=Piece.NORMAL)
    m.pieces.add(piece="at", score=0.25, type=Piece.NORMAL)
    assert len(m.pieces) == 67
    with open(path, "wb") as f:
        f.write(m.SerializeToString())


def prepare(src, dst, overrides):
    os.makedirs(dst)
    for f in ("config.json", "generation_config.json", "model.safetensors"):
        shutil.copy(os.path.join(LM, src, f), dst)
    path = os.path.join(dst, "config.json")
    config = json.load(open(path))
    config.update(overrides)
    json.dump(config, open(path, "w"), indent=2, sort_keys=True)
    sentencepiece_model(os.path.join(dst, "tokenizer.model"))
    # add_prefix_space false, as the SentencePiece model (no dummy prefix); LlamaModel's converter
    # writes it as tokenizer.ggml.add_space_prefix.
    json.dump({"bos_token": "<s>", "eos_token": "</s>", "pad_token": "<pad>", "unk_token": "<unk>",
               "add_bos_token": True, "add_eos_token": False, "add_prefix_space": False},
              open(os.path.join(dst, "tokenizer_config.json"), "w"), indent=2)


def forward_all(model, ids):
    with torch.no_grad():
        return model(input_ids=torch.tensor([ids]), use_cache=False).logits[0].float()


def greedy(model, prompt):
    ids = list(prompt)
    margin = float("inf")
    for _ in range(NEW_TOKENS):
        last = forward_all(model, ids)[-1]
        top = last.topk(2).values
        margin = min(margin, float(top[0] - top[1]))
        ids.append(int(last.argmax()))
    return ids[len(prompt):], margin


def compare_configs(gguf_config, config):
    out = {}
    for field in FIELDS:
        a, b = getattr(gguf_config, field, "<absent>"), getattr(config, field, "<absent>")
        if field == "sliding_window" and not any(t == "sliding_attention" for t in (getattr(config, "layer_types", None) or [])):
            # only meaningful where a layer uses it
            if b in (None, "<absent>") and (a in (None, "<absent>") or a >= 64):
                continue
        if "<absent>" in (a, b) and (a in (None, False) or b in (None, False)):
            continue  # a field one config class lacks, at its neutral value in the other
        if isinstance(a, float) and isinstance(b, float) and abs(a - b) <= 1e-6 * abs(b):
            continue  # an f32 metadata value
        if a != b:
            out[field] = {"gguf": a, "config_json": b}
    theta = lambda c: (getattr(c, "rope_parameters", None) or {}).get("rope_theta")
    if theta(gguf_config) != theta(config):
        out["rope_theta"] = {"gguf": theta(gguf_config), "config_json": theta(config)}
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--llama-cpp", default=os.environ.get("LLAMA_CPP", os.path.expanduser("~/.cache/attnzoo/llama.cpp")))
    parser.add_argument("out", nargs="?", default=os.path.join(ROOT, "tests", "fixtures", "gguf"))
    args = parser.parse_args()
    converter = os.path.join(args.llama_cpp, "convert_hf_to_gguf.py")
    assert os.path.isfile(converter), converter
    os.makedirs(args.out, exist_ok=True)
    gguf_py = os.path.join(args.llama_cpp, "gguf-py", "pyproject.toml")
    versions = {
        "transformers": importlib.metadata.version("transformers"),
        "gguf": importlib.metadata.version("gguf"),
        "torch": torch.__version__,
        "converter_gguf_py": next((l.split('"')[1] for l in open(gguf_py) if l.startswith("version")), None)
        if os.path.isfile(gguf_py) else None,
    }
    torch.set_grad_enabled(False)
    work = tempfile.mkdtemp(prefix="gguf-fixtures-")
    try:
        for index, (name, src, outtype, overrides, notes) in enumerate(CASES):
            folder = os.path.join(work, name)
            prepare(src, folder, overrides)
            out_file = os.path.join(args.out, f"{name}.gguf")
            cmd = [sys.executable, converter, folder, "--outtype", outtype, "--outfile", out_file]
            print("$", " ".join(shlex.quote(c) for c in cmd), flush=True)
            subprocess.run(cmd, check=True, cwd=args.llama_cpp, stdout=subprocess.DEVNULL)

            # Load from the GGUF: the config from its metadata, the tensors through transformers'
            # GGUF loader. The GGUF sits in its own folder so nothing else is picked up.
            gdir = os.path.join(work, name + "-gguf")
            os.makedirs(gdir)
            shutil.copy(out_file, gdir)
            fname = os.path.basename(out_file)
            config = AutoConfig.from_pretrained(folder)
            gguf_config = AutoConfig.from_pretrained(gdir, gguf_file=fname)
            mismatches = compare_configs(gguf_config, config)
            kwargs = dict(gguf_file=fname, dtype=torch.float32, attn_implementation="eager")
            if mismatches:
                source = "config.json"
                model = AutoModelForCausalLM.from_pretrained(gdir, config=config, **kwargs)
            else:
                source = "gguf"
                model = AutoModelForCausalLM.from_pretrained(gdir, **kwargs)
            model.eval()
            hf = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, attn_implementation="eager")
            hf.eval()

            # The prompt: the best of a few random draws: greedy margin above 1e-2 first (the test's
            # exact match needs it well above its tolerance), then no EOS among the greedy ids (so a
            # test that stops at EOS sees all 16), then the most distinct greedy ids (these tiny
            # models like to repeat one token), then the margin.
            best = None
            for attempt in range(12):
                g = torch.Generator().manual_seed(100 * index + attempt)
                prompt = [1] + [int(i) for i in torch.randint(4, config.vocab_size, (PROMPT_LEN - 1,), generator=g)]
                new, margin = greedy(model, prompt)
                score = (margin > 1e-2, EOS not in new, len(set(new)), margin)
                if best is None or score > best[0]:
                    best = (score, prompt, new, margin)
            _, prompt, new, margin = best
            all_logits = forward_all(model, prompt)
            ref_logits = forward_all(hf, prompt)
            hf_new, _ = greedy(hf, prompt)

            reference = {
                "gguf_file": fname,
                "source_fixture": f"tests/fixtures/lm/{src}",
                "outtype": outtype,
                "converter_command": f"python convert_hf_to_gguf.py <copy of tests/fixtures/lm/{src}> "
                                     f"--outtype {outtype} --outfile {fname}",
                "config_overrides": overrides,
                "versions": versions,
                "config_source": source,
                "gguf_config_mismatches": mismatches,
                "config": {f: getattr(model.config, f, None) for f in FIELDS if hasattr(model.config, f)}
                | {"rope_theta": (model.config.rope_parameters or {}).get("rope_theta"),
                   "model_type": model.config.model_type},
                "notes": notes,
                "prompt": prompt,
                "logits": all_logits[-1].tolist(),
                "greedy": new,
                "min_greedy_margin": margin,
                "max_abs_diff_vs_safetensors": float((all_logits - ref_logits).abs().max()),
                "greedy_matches_safetensors": new == hf_new,
            }
            if config.vocab_size < 200:
                reference["all_logits"] = all_logits.tolist()
            try:
                tok = AutoTokenizer.from_pretrained(gdir, gguf_file=fname)
                fields = GGUFReader(out_file).fields
                prefix = fields.get("tokenizer.ggml.add_space_prefix")
                reference["tokenizer"] = {
                    "class": type(tok).__name__, "text": TEXT, "ids": tok(TEXT)["input_ids"],
                    "greedy_text": tok.decode(new, skip_special_tokens=True),
                    # what the file says; transformers' GGUF "llama" tokenizer may prepend U+2581 anyway
                    "gguf_add_space_prefix": None if prefix is None else bool(prefix.contents()),
                }
            except Exception as e:  # noqa: BLE001 -- recorded, not fatal
                reference["tokenizer"] = {"error": f"{type(e).__name__}: {e}"[:300]}
            with open(os.path.join(args.out, f"{name}.reference.json"), "w") as f:
                json.dump(reference, f, indent=1)
            print(f"{name}: {os.path.getsize(out_file)} B, config from {source} {sorted(mismatches)}, margin "
                  f"{margin:.4f}, |gguf - safetensors| {reference['max_abs_diff_vs_safetensors']:.2e}, "
                  f"greedy same: {new == hf_new}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
