#!/usr/bin/env bash
# Runs attnzoo's fuzz targets (fuzz/, cargo-fuzz and libFuzzer on nightly) one after another,
# each for SECONDS, starting from its committed seeds (fuzz/corpus/TARGET) and the inputs earlier
# runs kept ($ATTNZOO_CACHE/fuzz-corpus/TARGET); with --fresh, from the seeds alone, keeping
# nothing (CI: libFuzzer replays every kept input before its clock starts, so a kept corpus would
# make the step grow run after run). Any crash, panic, timeout (30 s an input) or
# memory beyond 2 GiB resident fails (the 1 GiB bound on one allocation, -malloc_limit_mb, needs a
# sanitizer's allocator hooks: this build has none, so only the resident bound holds), and libFuzzer saves
# the input under fuzz/artifacts/TARGET/ (reproduce: cargo +nightly fuzz run TARGET FILE).
#
#   scripts/fuzz.sh [--fresh] SECONDS [TARGET...]     (default: every target)
#
# The build: optimised, debug assertions on (overflow checks), no sanitizer (Burn's kernels
# under AddressSanitizer are too slow to fuzz), in $ATTNZOO_CACHE/target-fuzz.
set -euo pipefail
cd "$(dirname "$0")/.."
fresh=false
[ "${1:-}" = --fresh ] && { fresh=true; shift; }
seconds=${1:?usage: scripts/fuzz.sh [--fresh] SECONDS [TARGET...]}
shift
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(checkpoint serve_api text corpus gguf)
export ATTNZOO_CACHE=${ATTNZOO_CACHE:-$HOME/.cache/attnzoo}
export CARGO_TARGET_DIR=$ATTNZOO_CACHE/target-fuzz
flags=(-O -a --sanitizer none)
cd fuzz
for target in "${targets[@]}"; do cargo +nightly fuzz build "${flags[@]}" "$target"; done
log=$(mktemp)
for target in "${targets[@]}"; do
  if $fresh; then work=$(mktemp -d); else work=$ATTNZOO_CACHE/fuzz-corpus/$target; fi
  mkdir -p "$work"
  # A GGUF file holds a model: its seeds (whole tiny models) are tens of kilobytes.
  max_len=8192; [ "$target" = gguf ] && max_len=131072
  echo "== fuzz $target for $seconds s"
  status=0
  cargo +nightly fuzz run "${flags[@]}" "$target" "$work" "corpus/$target" -- \
    -max_total_time="$seconds" -timeout=30 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
    -max_len="$max_len" -len_control=0 -print_final_stats=1 >"$log" 2>&1 || status=$?
  # libFuzzer's progress lines and the library's own notes left out.
  grep -a -v -e '^#[0-9]' -e '^warning: sentence' "$log" | tail -n 60 || true
  ! $fresh || rm -rf "$work"
  [ "$status" -eq 0 ] || { echo "fuzz $target failed (status $status): the input is in fuzz/artifacts/$target/"; rm -f "$log"; exit 1; }
done
rm -f "$log"
