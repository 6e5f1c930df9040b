#!/usr/bin/env python3
# data/perplexity.txt is the beginning of the Apache License 2.0 (whole paragraphs, copied verbatim, which the licence permits).
"""End-to-end references of two real GGUF models, as transformers runs them, for attnzoo's GGUF tests:
prompt ids, greedy continuations and logits on a vocab subset, plus llama.cpp's perplexity.

Run with the reference venv (torch 2.9.0, transformers 5.23.0, gguf 0.19.0), offline:

    HF_HUB_OFFLINE=1 nice ~/.cache/attnzoo/ref-venv/bin/python scripts/gen_gguf_reference.py \
        [--gguf-dir DIR] [--only smollm2|gemma3] [--llama-bin DIR] [--save-f32 DIR]

--gguf-dir defaults to $ATTNZOO_GGUF_DIR or ~/.cache/attnzoo/gguf (scripts/fetch-gguf.sh smollm2 and
scripts/fetch-gguf.sh gemma3 put the files there).

Writes, for each stem (smollm2: SmolLM2-135M-Instruct.Q4_1.gguf, gemma3: gemma-3-270m-q4_k_m.gguf):

* tests/fixtures/gguf/<stem>.reference.json: `file`, `sha256`, versions, the chat template used, the
  generation config, and per prompt `message`, `chat_text`, `prompt_ids`, `greedy` (new ids of
  `model.generate(input_ids, max_new_tokens=40, do_sample=False)`), `stopped_at_eos`, `greedy_text`
  (decoded with skip_special_tokens=True), `min_greedy_margin` (smallest top-1 minus top-2 logit over
  the greedy steps), `top5_last` (the 5 best next tokens after the prompt) and `vocab_subset_key`;
  `greedy_margins` (per step); `perplexity_text` (token counts of data/perplexity.txt),
  `transformers_perplexity` and `llama_perplexity` (see below).
* tests/fixtures/gguf/<stem>.reference.safetensors: per prompt i, `ids_i` int64 [K] (K = 512: the top 64
  ids at the last prompt position plus 448 other ids drawn uniformly without replacement with
  numpy.random.default_rng(SEED + i), sorted ascending) and `logits_i` float32 [T, K], the logits of one
  forward over `prompt_ids` at every position restricted to `ids_i`.
* data/perplexity.txt, if it is missing: the first whole paragraphs of
  /usr/share/common-licenses/Apache-2.0 (leading blank line dropped, ending with one newline), the
  shortest such prefix with at least 4 * 256 + 32 tokens under both tokenizers (so that
  `llama-perplexity -c 256` scores 4 chunks).

Each GGUF is loaded from a temporary folder holding only a link to it (so that nothing else is read)
with `AutoTokenizer.from_pretrained(folder, gguf_file=name)` and
`AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)` (transformers
dequantises every tensor to f32 with gguf-py).

Prompts: `tokenizer.apply_chat_template([{"role": "user", "content": msg}], add_generation_prompt=True,
tokenize=False)`, tokenised as transformers' chat pipeline does (TextGenerationPipeline passes the chat
to apply_chat_template(tokenize=True), which calls `tokenizer(chat_text, add_special_tokens=False)`:
the template itself writes BOS). The Gemma GGUF carries no `tokenizer.chat_template`, so for it the
Gemma 3 template (GEMMA3_TEMPLATE below, the user/assistant part of the one Google ships with
gemma-3-*-it) is passed explicitly; the JSON records which template was used.

Generation uses the model's generation config as transformers builds it from the GGUF (for Gemma that
is eos_token_id 1 = <eos> only, not <end_of_turn>); the JSON records it.

--llama-bin DIR (or $LLAMA_CPP_BIN): the folder of llama.cpp's binaries (scripts/build-llama-cpp.sh);
runs `llama-perplexity -m FILE -f data/perplexity.txt -c 256 -t 2` (-c 128 if the text has fewer than
512 tokens with that file's tokenizer) and records `llama_perplexity: {context, ppl, ppl_stderr, chunks,
running_ppl, command, tokens}`, `tokens` being the ids it evaluates (from llama-tokenize, same
settings). Without it, a `llama_perplexity` already in the JSON is kept. `transformers_perplexity`
(always) and `transformers_perplexity_on_llama_tokens` (when those ids are known) apply
llama-perplexity's scheme (chunked_perplexity below) to the f32 transformers model.

--save-f32 DIR: also saves the GGUF-loaded SmolLM2 (model.save_pretrained and
tokenizer.save_pretrained) there, as the f32 Hugging Face folder for llama.cpp's converter:

    PYTHONPATH=$LLAMA_CPP/gguf-py ~/.cache/attnzoo/ref-venv/bin/python $LLAMA_CPP/convert_hf_to_gguf.py \
        DIR --outtype f32 --outfile ~/.cache/attnzoo/gguf/SmolLM2-135M-Instruct.f32.gguf

(its tensors equal gguf-py's dequantisation of the Q4_1 file bit for bit).
"""

import argparse
import hashlib
import importlib.metadata
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
import transformers
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM, AutoTokenizer

FILES = {
    "smollm2": "SmolLM2-135M-Instruct.Q4_1.gguf",
    "gemma3": "gemma-3-270m-q4_k_m.gguf",
}

MESSAGES = [
    "What is the capital of France?",
    "Write a haiku about the sea.",
    "Explain attention in one sentence.",
    "List three prime numbers.",
]

# The user/assistant part of the Gemma 3 instruction template (system messages are not used here).
GEMMA3_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{% if message['role'] == 'assistant' %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif %}"
    "{{ '<start_of_turn>' + role + '\n' + (message['content'] | trim) + '<end_of_turn>\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<start_of_turn>model\n' }}{% endif %}"
)

MAX_NEW_TOKENS = 40
K = 512
TOP = 64
SEED = 20250
LICENSE = Path("/usr/share/common-licenses/Apache-2.0")
PPL_TEXT = Path("data/perplexity.txt")
PPL_CONTEXT = 256
FIXTURES = Path("tests/fixtures/gguf")


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def load(path):
    with tempfile.TemporaryDirectory() as folder:
        os.symlink(path.resolve(), Path(folder) / path.name)
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=path.name)
        model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=path.name, dtype=torch.float32)
    return tokenizer, model.eval()


def write_perplexity_text(tokenizers):
    """The shortest whole-paragraph prefix of the Apache-2.0 text with >= 4 * 256 + 32 tokens under
    every tokenizer (counted without special tokens)."""
    lines = LICENSE.read_text(encoding="utf-8").split("\n")
    for end, line in enumerate(lines):
        if end == 0 or line.strip():
            continue
        text = "\n".join(lines[:end]).lstrip("\n") + "\n"
        if not text.strip():
            continue
        counts = [len(t(text, add_special_tokens=False)["input_ids"]) for t in tokenizers]
        if min(counts) >= 4 * PPL_CONTEXT + 32:
            PPL_TEXT.parent.mkdir(parents=True, exist_ok=True)
            PPL_TEXT.write_text(text, encoding="utf-8")
            print(f"wrote {PPL_TEXT}: {len(text)} chars, tokens {counts}", file=sys.stderr)
            return
    sys.exit("the licence text is too short")


def llama_tokens(bin_dir, gguf, text):
    """The ids llama-perplexity evaluates: llama.cpp's own tokenizer on the -f text minus one trailing
    newline, add_special = the GGUF's add_bos_token, parse_special = false, no escape processing."""
    cmd = [str(Path(bin_dir) / "llama-tokenize"), "-m", str(gguf), "--stdin", "--ids", "--no-escape",
           "--no-parse-special", "--log-disable"]
    run = subprocess.run(cmd, input=text.removesuffix("\n"), capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"llama-tokenize failed ({run.returncode}):\n{run.stderr[-4000:]}")
    return json.loads(run.stdout.strip().splitlines()[-1])


def llama_perplexity(bin_dir, gguf, text):
    tokens = llama_tokens(bin_dir, gguf, text)
    context = PPL_CONTEXT if len(tokens) >= 2 * PPL_CONTEXT else PPL_CONTEXT // 2
    cmd = [str(Path(bin_dir) / "llama-perplexity"), "-m", str(gguf), "-f", str(PPL_TEXT),
           "-c", str(context), "-t", "2"]
    print("running", shlex.join(cmd), file=sys.stderr)
    run = subprocess.run(cmd, capture_output=True, text=True)
    log = run.stdout + run.stderr
    if run.returncode != 0:
        sys.exit(f"llama-perplexity failed ({run.returncode}):\n{log[-4000:]}")
    final = re.search(r"Final estimate: PPL = ([0-9.]+) \+/- ([0-9.]+)", log)
    chunks = re.search(r"calculating perplexity over (\d+) chunks", log)
    per_chunk = [float(x) for x in re.findall(r"\[\d+\](\d+\.\d+),", log)]
    if not final or not chunks:
        sys.exit(f"cannot parse llama-perplexity's output:\n{log[-4000:]}")
    display = ["llama-perplexity", "-m", gguf.name, "-f", str(PPL_TEXT), "-c", str(context), "-t", "2"]
    return {
        "context": context,
        "ppl": float(final.group(1)),
        "ppl_stderr": float(final.group(2)),
        "chunks": int(chunks.group(1)),
        "running_ppl": per_chunk,
        "command": shlex.join(display),
        "note": None if context == PPL_CONTEXT else f"text has fewer than {2 * PPL_CONTEXT} tokens with this tokenizer",
        "tokens": tokens,
    }


def chunked_perplexity(model, tokens, n_ctx, bos, add_bos):
    """llama-perplexity's scheme (tools/perplexity/perplexity.cpp, perplexity()) on the transformers
    model: chunks tokens[i*n_ctx:(i+1)*n_ctx] for i < len(tokens) // n_ctx, each evaluated alone from
    position 0 with its first token overwritten by BOS when the vocab adds BOS; the logits at positions
    n_ctx/2 .. n_ctx-2 score the next token (n_ctx/2 - 1 tokens a chunk); PPL = exp(sum NLL / count)."""
    first = n_ctx // 2
    nll, nll2, count, running = 0.0, 0.0, 0, []
    for i in range(len(tokens) // n_ctx):
        chunk = list(tokens[i * n_ctx:(i + 1) * n_ctx])
        if add_bos:
            chunk[0] = bos
        with torch.no_grad():
            logits = model(torch.tensor([chunk])).logits[0].double()
        logp = torch.log_softmax(logits[first:n_ctx - 1], dim=-1)
        v = -logp[torch.arange(n_ctx - 1 - first), torch.tensor(chunk[first + 1:])]
        nll += float(v.sum())
        nll2 += float((v * v).sum())
        count += n_ctx - 1 - first
        running.append(float(np.exp(nll / count)))
    mean = nll / count
    var = nll2 / count - mean * mean
    ppl = float(np.exp(mean))
    return {"context": n_ctx, "chunks": len(running), "scored_tokens": count, "ppl": ppl,
            "ppl_stderr": float(np.sqrt(var / (count - 1)) * ppl), "running_ppl": running,
            "bos_overwrites_first_token": bool(add_bos)}


def margin(step_logits):
    top2 = torch.topk(step_logits.float(), 2).values
    return float(top2[0] - top2[1])


def reference(stem, path, tokenizer, model, previous, llama_bin):
    chat_template = tokenizer.chat_template
    template_source = "gguf tokenizer.chat_template"
    if chat_template is None:
        if stem != "gemma3":
            sys.exit(f"{path.name} has no chat template")
        chat_template = GEMMA3_TEMPLATE
        template_source = "GEMMA3_TEMPLATE in scripts/gen_gguf_reference.py (the GGUF has none)"
    gen = model.generation_config
    eos = gen.eos_token_id
    eos = set(eos if isinstance(eos, list) else [eos]) if eos is not None else set()
    prompts, tensors = [], {}
    for i, message in enumerate(MESSAGES):
        chat = [{"role": "user", "content": message}]
        text = tokenizer.apply_chat_template(chat, add_generation_prompt=True, tokenize=False,
                                             chat_template=chat_template)
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        # The chat pipeline's way, apply_chat_template(tokenize=True), must give the same ids.
        piped = tokenizer.apply_chat_template(chat, add_generation_prompt=True, tokenize=True,
                                              return_dict=True, chat_template=chat_template)["input_ids"]
        assert list(piped) == ids, (piped, ids)
        input_ids = torch.tensor([ids])
        with torch.no_grad():
            logits = model(input_ids).logits[0].float()  # [T, V]
            out = model.generate(input_ids, attention_mask=torch.ones_like(input_ids),
                                 max_new_tokens=MAX_NEW_TOKENS, do_sample=False,
                                 output_logits=True, return_dict_in_generate=True)
        new = out.sequences[0, len(ids):].tolist()
        steps = [s[0] for s in out.logits]
        for s, tok in zip(steps, new):
            assert int(s.argmax()) == tok, "greedy step is not the argmax"
        last = logits[-1]
        top = torch.topk(last, TOP).indices
        rest = np.setdiff1d(np.arange(last.numel()), top.numpy())
        rng = np.random.default_rng(SEED + i)
        drawn = rng.choice(rest, K - TOP, replace=False)
        subset = torch.from_numpy(np.sort(np.concatenate([top.numpy(), drawn]))).to(torch.int64)
        tensors[f"ids_{i}"] = subset.contiguous()
        tensors[f"logits_{i}"] = logits[:, subset].contiguous()
        top5 = torch.topk(last, 5)
        stopped = bool(new) and new[-1] in eos
        prompts.append({
            "message": message,
            "chat_text": text,
            "prompt_ids": ids,
            "greedy": new,
            "stopped_at_eos": stopped,
            "greedy_text": tokenizer.decode(new, skip_special_tokens=True),
            "greedy_text_with_special": tokenizer.decode(new),
            "min_greedy_margin": min(margin(s) for s in steps),
            "greedy_margins": [margin(s) for s in steps],
            "top5_last": [{"id": int(t), "token": tokenizer.decode([int(t)]), "logit": float(v)}
                          for v, t in zip(top5.values, top5.indices)],
            "vocab_subset_key": {"ids": f"ids_{i}", "logits": f"logits_{i}", "seed": SEED + i},
        })
        print(f"[{stem}] {message!r}: {len(ids)} prompt ids; top-5 next: "
              + ", ".join(f"{p['token']!r} {p['logit']:.2f}" for p in prompts[-1]["top5_last"]),
              file=sys.stderr)
        print(f"[{stem}]   greedy ({len(new)} ids, eos={stopped}, min margin "
              f"{prompts[-1]['min_greedy_margin']:.3f}): {prompts[-1]['greedy_text']!r}", file=sys.stderr)

    ppl_text = PPL_TEXT.read_text(encoding="utf-8")
    bare = len(tokenizer(ppl_text, add_special_tokens=False)["input_ids"])
    default = len(tokenizer(ppl_text)["input_ids"])
    # llama-perplexity drops one trailing newline of the -f file and tokenises with add_special=true
    # (BOS iff the GGUF's add_bos_token, which is what transformers' default does for both files).
    llama_ids = tokenizer(ppl_text.removesuffix("\n"))["input_ids"]
    result = {
        "file": path.name,
        "sha256": sha256(path),
        "transformers": transformers.__version__,
        "gguf": importlib.metadata.version("gguf"),
        "torch": torch.__version__,
        "model_class": type(model).__name__,
        "tokenizer_class": type(tokenizer).__name__,
        "vocab_size": model.config.vocab_size,
        "chat_template_source": template_source,
        "chat_template": chat_template,
        "tokenization": "tokenizer(chat_text, add_special_tokens=False): the template writes BOS "
                        "(as apply_chat_template(tokenize=True) and the chat pipeline do)",
        "generation_config": {
            "max_new_tokens": MAX_NEW_TOKENS,
            "do_sample": False,
            "eos_token_id": gen.eos_token_id,
            "bos_token_id": gen.bos_token_id,
            "pad_token_id": gen.pad_token_id,
        },
        "subset": {"k": K, "top": TOP, "seed_base": SEED,
                   "how": "top 64 ids at the last prompt position + 448 others from "
                          "numpy.random.default_rng(seed).choice(rest, 448, replace=False), sorted"},
        "prompts": prompts,
        "perplexity_text": {
            "path": str(PPL_TEXT),
            "sha256": hashlib.sha256(ppl_text.encode("utf-8")).hexdigest(),
            "tokens": bare,
            "tokens_with_special": default,
            "llama_cpp_input_tokens": len(llama_ids),
            "llama_cpp_input": "tokenizer(text minus one trailing newline) with special tokens, "
                               "as llama-perplexity reads -f and tokenises",
        },
        "transformers_perplexity": chunked_perplexity(model, llama_ids, PPL_CONTEXT, tokenizer.bos_token_id,
                                                      llama_ids[0] == tokenizer.bos_token_id),
    }
    if llama_bin:
        result["llama_perplexity"] = llama_perplexity(llama_bin, path, ppl_text)
    elif previous and "llama_perplexity" in previous:
        result["llama_perplexity"] = previous["llama_perplexity"]
    ppl = result.get("llama_perplexity")
    if ppl and "tokens" in ppl:
        # llama.cpp's tokenizer differs from transformers' GGUF tokenizer on some whitespace runs, so
        # also score the exact ids llama-perplexity evaluated.
        ppl["tokens_match_transformers"] = ppl["tokens"] == llama_ids
        result["transformers_perplexity_on_llama_tokens"] = chunked_perplexity(
            model, ppl["tokens"], ppl["context"], tokenizer.bos_token_id,
            ppl["tokens"][0] == tokenizer.bos_token_id)
    return result, tensors


def save_f32(model, tokenizer, folder):
    """Saves the GGUF-loaded (already dequantised, f32) model and its tokenizer as a plain Hugging Face
    folder. transformers refuses to save a model it loaded through the "gguf" quantizer, although every
    weight is a plain f32 tensor by then, so the quantizer and its config entry are dropped first."""
    model.hf_quantizer = None
    model.is_quantized = False
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    print(f"saved the f32 model and tokenizer to {folder}", file=sys.stderr)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gguf-dir", type=Path, default=Path(
        os.environ.get("ATTNZOO_GGUF_DIR", Path.home() / ".cache" / "attnzoo" / "gguf")))
    parser.add_argument("--only", choices=sorted(FILES))
    parser.add_argument("--llama-bin", default=os.environ.get("LLAMA_CPP_BIN"))
    parser.add_argument("--save-f32", type=Path)
    args = parser.parse_args()
    torch.manual_seed(0)
    loaded = {}
    for stem, name in FILES.items():
        path = args.gguf_dir / name
        if not path.is_file():
            sys.exit(f"{path} not found: run scripts/fetch-gguf.sh {stem} first")
        loaded[stem] = path
    if not PPL_TEXT.is_file():
        tokenizers = []
        for path in loaded.values():
            with tempfile.TemporaryDirectory() as folder:
                os.symlink(path.resolve(), Path(folder) / path.name)
                tokenizers.append(AutoTokenizer.from_pretrained(folder, gguf_file=path.name))
        write_perplexity_text(tokenizers)
    FIXTURES.mkdir(parents=True, exist_ok=True)
    for stem, path in loaded.items():
        if args.only and stem != args.only:
            continue
        tokenizer, model = load(path)
        out_json = FIXTURES / f"{stem}.reference.json"
        previous = json.loads(out_json.read_text(encoding="utf-8")) if out_json.is_file() else None
        result, tensors = reference(stem, path, tokenizer, model, previous, args.llama_bin)
        out_st = FIXTURES / f"{stem}.reference.safetensors"
        save_file(tensors, str(out_st), metadata={"file": path.name, "sha256": result["sha256"]})
        os.chmod(out_st, 0o644)
        out_json.write_text(json.dumps(result, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {out_json} and {stem}.reference.safetensors", file=sys.stderr)
        if args.save_f32 and stem == "smollm2":
            save_f32(model, tokenizer, args.save_f32)
        del model


if __name__ == "__main__":
    main()
