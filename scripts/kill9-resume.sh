#!/usr/bin/env bash
# Training killed with `kill -9` at random moments, KILLS times, each kill followed by a
# `--resume` that must succeed: the run in OUT trains (a tiny Transformer on an invented corpus)
# for a random 0.2-4 s and is killed; then `attnzoo train --resume --epochs DONE+1` must exit 0
# with state.json at epoch DONE+1 (a run killed before it wrote model.json starts afresh).
#
#   scripts/kill9-resume.sh [KILLS=50] [OUT=kill9-out] [SEED=1]
#
# ATTNZOO_BIN picks the binary (default: $CARGO_TARGET_DIR/debug/attnzoo, else target/debug).
set -euo pipefail
cd "$(dirname "$0")/.."
kills=${1:-50}
out=${2:-kill9-out}
RANDOM=${3:-1}
bin=${ATTNZOO_BIN:-${CARGO_TARGET_DIR:-target}/debug/attnzoo}
rm -rf "$out"
mkdir -p "$out/corpus"
python3 - "$out/corpus" <<'PY'
import sys
subjects = [("Der Hund", "The dog"), ("Die Katze", "The cat"), ("Der Mann", "The man"),
            ("Die Frau", "The woman"), ("Das Kind", "The child")]
verbs = [("schläft", "sleeps"), ("läuft", "runs"), ("isst", "eats"), ("singt", "sings")]
adverbs = [("heute", "today"), ("hier", "here"), ("oft", "often")]
splits = {"train.tsv": [], "valid.tsv": [], "test.tsv": []}
n = 0
for ds, es in subjects:
    for dv, ev in verbs:
        for da, ea in adverbs:
            split = "test.tsv" if n % 5 == 0 else "valid.tsv" if n % 7 == 0 else "train.tsv"
            splits[split].append(f"{ds} {dv} {da}.\t{es} {ev} {ea}.\n")
            n += 1
for name, lines in splits.items():
    open(f"{sys.argv[1]}/{name}", "w").write("".join(lines))
open(f"{sys.argv[1]}/lexicon.tsv", "w").write(
    "".join(f"{d}\t{e}\n" for d, e in subjects + verbs + adverbs))
PY
run="$out/run"
fresh=(train --out "$run" --corpus "$out/corpus" --model transformer --hidden 32 --layers 1
  --batch-size 8 --backend ndarray)
epoch() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['epoch'])" "$run/state.json" 2>/dev/null || echo 0; }
start_training() { # $1: epochs in all
  if [ -f "$run/model.json" ]; then
    exec "$bin" train --out "$run" --corpus "$out/corpus" --backend ndarray --resume --epochs "$1"
  else
    exec "$bin" "${fresh[@]}" --epochs "$1"
  fi
}
afresh=0
for i in $(seq 1 "$kills"); do
  (start_training 100000) >"$out/killed.log" 2>&1 &
  pid=$!
  sleep "$(printf '%d.%02d' $((RANDOM % 4)) $((20 + RANDOM % 80)))"
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  done_epochs=$(epoch)
  [ -f "$run/model.json" ] || afresh=$((afresh + 1))
  if ! (start_training $((done_epochs + 1))) >"$out/resume.log" 2>&1; then
    echo "kill $i: the resume after epoch $done_epochs failed:"; cat "$out/resume.log"; exit 1
  fi
  now=$(epoch)
  [ "$now" -eq $((done_epochs + 1)) ] || { echo "kill $i: epoch $now after resuming $done_epochs"; exit 1; }
  echo "kill $i: killed at epoch $done_epochs (+ partial), resumed to epoch $now"
done
echo "$kills kills, $kills successful resumes ($afresh killed before model.json: started afresh); final epoch $(epoch)"
