#!/usr/bin/env python3
"""Interleaved rounds of the language-model speed benchmark (docs/MEASUREMENTS.md, "Language
models"): each round runs `examples/lm_speed.rs` on every backend named, then the anchor, one
round each, on the same model: `scripts/bench_lm_torch.py` (`transformers`) on a folder, or
llama.cpp's `llama-bench -p 512 -n 128 -d 0,512` (batch 1) on a GGUF file.

    python3 scripts/bench_lm.py --model DIR --lm-speed $CARGO_TARGET_DIR/release/examples/lm_speed \\
        [--backend flex --backend tch] [--batch 1 --batch 8] [--rounds 3] [--log rounds.jsonl]
    python3 scripts/bench_lm.py --model FILE.gguf --llama-bench BIN/llama-bench --lm-speed ... \\
        --backend flex --batch 1 [--lm-speed-arg=--dequantize]

With llama-bench, decode is measured at the same depth in both engines: "decode" after the
512-token prompt (llama-bench's tg128 at `-d 512`, attnzoo's steps after its prefill) and
"decode from empty" (tg128 at depth 0; attnzoo's 127 steps after a one-token prompt).

Prints, per batch size and phase (prefill, decode), each engine's tokens/s as min–median–max
over the rounds and each backend's ratio to `transformers` (attnzoo's rate over transformers'
in the same round; above 1, attnzoo is faster) as min–median–max. Run it with the reference
venv's python (torch 2.9.0, transformers 5.x); the Rust example needs LibTorch for tch.
"""
import argparse
import json
import os
import subprocess
import sys


def run(command, log):
    print("$ " + " ".join(command), file=sys.stderr, flush=True)
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{command[0]} failed ({done.returncode}): {done.stderr.strip()}")
    results = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    for result in results:
        log.write(json.dumps(result) + "\n")
    log.flush()
    return results


def llama_bench(args, log):
    """One llama-bench run: pp512, and tg128 from an empty context and after 512 positions, on
    `--threads` threads, as lm_speed's JSON lines."""
    command = [args.llama_bench, "-m", args.model, "-p", "512", "-n", "128", "-d", "0,512",
               "-t", str(args.threads), "-r", "1", "-o", "jsonl"]
    print("$ " + " ".join(command), file=sys.stderr, flush=True)
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"llama-bench failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    results = []
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            row = json.loads(line)
            if row["n_prompt"] > 0:
                if row["n_depth"] > 0:
                    continue  # a prompt after 512 positions: not measured in attnzoo
                phase = "prefill"
            else:
                phase = "decode" if row["n_depth"] > 0 else "decode from empty"
            result = {"engine": "llama.cpp", "backend": "llama.cpp", "batch": 1, "phase": phase,
                      "tok_s": row["avg_ts"]}
            log.write(json.dumps(result) + "\n")
            results.append(result)
    return results


def spread(values, digits=1):
    values = sorted(values)
    return "–".join(f"{value:.{digits}f}" for value in (values[0], values[len(values) // 2], values[-1]))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", "--model-dir", required=True, dest="model")
    parser.add_argument("--llama-bench", help="llama.cpp's llama-bench: the anchor for a GGUF file")
    parser.add_argument("--lm-speed-arg", action="append", default=[], help="passed on to lm_speed")
    parser.add_argument("--lm-speed", required=True, help="the release build of examples/lm_speed.rs")
    parser.add_argument("--backend", action="append", dest="backends")
    parser.add_argument("--batch", type=int, action="append", dest="batches")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--log", default=os.devnull, help="append every measurement here, one JSON line each")
    args = parser.parse_args()
    backends = args.backends or ["flex", "tch"]
    batches = [str(batch) for batch in args.batches or [1, 8]]
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    torch_script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench_lm_torch.py")
    batch_args = [arg for batch in batches for arg in ("--batch", batch)]
    anchor = "llama.cpp" if args.llama_bench else "transformers"
    if args.llama_bench and batches != ["1"]:
        parser.error("llama-bench measures batch 1: give --batch 1")
    rates = {}  # (engine, batch, phase) -> [tok/s per round]
    with open(args.log, "a", encoding="utf-8") as log:
        for _ in range(args.rounds):
            commands = [[args.lm_speed, "--model", args.model, "--backend", backend, *batch_args,
                         *args.lm_speed_arg] for backend in backends]
            for command in commands:
                for result in run(command, log):
                    rates.setdefault((result["backend"], result["batch"], result["phase"]), []).append(result["tok_s"])
                if args.llama_bench:
                    # Decode from an empty context: 127 steps after a one-token prompt.
                    for result in run(command + ["--prompt-len", "1"], log):
                        if result["phase"] == "decode":
                            key = (result["backend"], result["batch"], "decode from empty")
                            rates.setdefault(key, []).append(result["tok_s"])
            if args.llama_bench:
                for result in llama_bench(args, log):
                    rates.setdefault((anchor, 1, result["phase"]), []).append(result["tok_s"])
            else:
                for result in run([sys.executable, torch_script, "--model-dir", args.model,
                                   "--threads", str(args.threads), *batch_args], log):
                    rates.setdefault((anchor, result["batch"], result["phase"]), []).append(result["tok_s"])
    print(f"tokens/s, min–median–max over {args.rounds} rounds; ratio = attnzoo / {anchor}, same round")
    for batch in map(int, batches):
        phases = ("prefill", "decode", "decode from empty") if args.llama_bench else ("prefill", "decode")
        for phase in phases:
            theirs = rates[(anchor, batch, phase)]
            line = f"batch {batch} {phase}: {anchor} {spread(theirs)}"
            for backend in backends:
                mine = rates[(backend, batch, phase)]
                ratios = [a / b for a, b in zip(mine, theirs)]
                line += f"; attnzoo {backend} {spread(mine)} ({spread(ratios, 2)}×)"
            print(line)


if __name__ == "__main__":
    main()
