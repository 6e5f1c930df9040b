#!/usr/bin/env bash
# Soak of `attnzoo serve`: a checkpoint and MiniLM served on a loopback port under `hey`
# (scripts/soak_client.py: 16 keep-alive connections for MINUTES one-minute rounds, translate
# greedy and beam 5, encode, about 10 % bad requests), the server's RSS sampled every 10 s, then
# SIGTERM: the server must exit 0 within its drain time. Exits non-zero if anything fails.
#
#   scripts/soak-serve.sh CHECKPOINT [MINUTES=30] [OUT=soak-out]
#
# ATTNZOO_BIN picks the binary (default: $CARGO_TARGET_DIR/debug/attnzoo, else target/debug);
# MiniLM is scripts/fetch-minilm.sh's folder. Writes OUT/rss.tsv (seconds, KiB), OUT/client.jsonl
# (per-minute requests, status counts and latencies of each stream) and OUT/server.log.
set -euo pipefail
cd "$(dirname "$0")/.."
checkpoint=${1:?usage: scripts/soak-serve.sh CHECKPOINT [MINUTES] [OUT]}
minutes=${2:-30}
out=${3:-soak-out}
command -v hey >/dev/null || { echo "hey is not installed (Debian: apt-get install hey)"; exit 1; }
bin=${ATTNZOO_BIN:-${CARGO_TARGET_DIR:-target}/debug/attnzoo}
minilm=$(scripts/fetch-minilm.sh)
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$out"
"$bin" serve --checkpoint "$checkpoint" --model-dir "$minilm" --addr "127.0.0.1:$port" \
  >"$out/server.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do
  curl -sf "http://127.0.0.1:$port/health" >/dev/null && break
  kill -0 "$server" || { cat "$out/server.log"; exit 1; }
  sleep 1
done
started=$(date +%s)
printf 'seconds\trss_kib\n' >"$out/rss.tsv"
(
  while kill -0 "$server" 2>/dev/null; do
    rss=$(awk '/^VmRSS/ {print $2}' "/proc/$server/status" 2>/dev/null || true)
    [ -n "$rss" ] && printf '%s\t%s\n' "$(($(date +%s) - started))" "$rss" >>"$out/rss.tsv"
    sleep 10
  done
) &
sampler=$!
client_status=0
python3 scripts/soak_client.py "127.0.0.1:$port" "$minutes" \
  | tee "$out/client.jsonl" || client_status=$?
term=$(date +%s.%N)
kill -TERM "$server"
server_status=0
wait "$server" || server_status=$?
trap - EXIT
drain=$(python3 -c "import time; print(round(time.time() - $term, 2))")
kill "$sampler" 2>/dev/null || true
echo "SIGTERM: exit status $server_status after ${drain} s"
python3 - "$out/rss.tsv" <<'PY'
import sys
rows = [line.split("\t") for line in open(sys.argv[1]).read().split("\n")[1:] if line]
rss = [(int(t), int(k)) for t, k in rows]
if rss:
    warm = [k for t, k in rss if t >= 60] or [k for _, k in rss]
    first, last, peak = warm[0], warm[-1], max(warm)
    print(f"RSS: {len(rss)} samples; after 60 s warm-up {first} KiB -> {last} KiB "
          f"({100 * (last - first) / first:+.1f} %), peak {peak} KiB")
PY
[ "$client_status" -eq 0 ] && [ "$server_status" -eq 0 ]
