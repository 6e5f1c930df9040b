#!/usr/bin/env bash
# Builds llama.cpp (CPU only, Release, native) as a reference for GGUF parity and speed checks:
#   scripts/build-llama-cpp.sh
# The source is the vendor/llama.cpp tree of PyPI's llama-cpp-python==0.3.36 sdist, unpacked to
# $ATTNZOO_LLAMA_CPP_DIR (default ~/.cache/attnzoo/llama.cpp) and kept there (convert_hf_to_gguf.py,
# gguf-py). cmake and ninja come from PyPI into ~/.cache/attnzoo/build-venv. Builds llama-bench,
# llama-perplexity, llama-completion, llama-simple, llama-quantize, llama-tokenize into DIR/build/bin.
# Idempotent; prints the bin folder on stdout, messages on stderr; exit 1 on failure.
# llama.cpp is MIT. Models used with it are fetched by scripts/fetch-gguf.sh (SmolLM2: Apache-2.0;
# Gemma: Gemma terms, fetch, never commit).
set -euo pipefail
version=0.3.36
cache=$HOME/.cache/attnzoo
src=${ATTNZOO_LLAMA_CPP_DIR:-$cache/llama.cpp}
venv=$cache/build-venv
bin=$src/build/bin
tools=(llama-bench llama-perplexity llama-completion llama-simple llama-quantize llama-tokenize)
die() { echo "build-llama-cpp: $*" >&2; exit 1; }

built=1
for t in "${tools[@]}"; do [ -x "$bin/$t" ] || built=0; done
if [ "$built" = 1 ]; then echo "$bin"; exit 0; fi

python=$(command -v python3 || command -v python) || die "python3 is needed"
command -v c++ >/dev/null || die "a C++ compiler is needed (apt-get install g++)"
mkdir -p "$cache"

# 1. Source: vendor/llama.cpp from the llama-cpp-python sdist.
if [ "$(cat "$src/.attnzoo-source" 2>/dev/null)" != "llama-cpp-python==$version" ]; then
  work=$(mktemp -d -p "$cache"); trap 'rm -rf "$work"' EXIT
  echo "build-llama-cpp: downloading the llama-cpp-python==$version sdist" >&2
  # --no-binary only for this package: with :all: pip would build its cmake/ninja build deps from source.
  "$python" -m pip download --quiet --no-deps --no-binary llama-cpp-python --dest "$work" \
    "llama-cpp-python==$version" >&2 || die "pip download llama-cpp-python==$version failed"
  top=llama_cpp_python-$version
  tar -xzf "$work/$top.tar.gz" -C "$work" "$top/vendor/llama.cpp" "$top/.git/modules/vendor/llama.cpp/HEAD" \
    || die "no vendor/llama.cpp in the sdist"
  rm -f "$work/$top/vendor/llama.cpp/.git"   # a submodule pointer that is dangling once unpacked
  cut -c1-8 "$work/$top/.git/modules/vendor/llama.cpp/HEAD" > "$work/$top/vendor/llama.cpp/.attnzoo-commit"
  echo "llama-cpp-python==$version" > "$work/$top/vendor/llama.cpp/.attnzoo-source"
  rm -rf "$src"; mv "$work/$top/vendor/llama.cpp" "$src"
fi

# 2. Build tools: cmake and ninja from PyPI in a small venv.
if ! [ -x "$venv/bin/cmake" ] || ! [ -x "$venv/bin/ninja" ]; then
  echo "build-llama-cpp: installing cmake and ninja into $venv" >&2
  "$python" -m venv "$venv" >&2 || die "python3 -m venv failed (apt-get install python3-venv)"
  "$venv/bin/pip" install --quiet cmake ninja >&2 || die "pip install cmake ninja failed"
fi

# 3. Configure and build only the tools we need.
"$venv/bin/cmake" -S "$src" -B "$src/build" -G Ninja -DCMAKE_MAKE_PROGRAM="$venv/bin/ninja" \
  -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=ON \
  -DGGML_CUDA=OFF -DGGML_VULKAN=OFF -DGGML_METAL=OFF -DGGML_BLAS=OFF \
  -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF \
  -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_EXAMPLES=ON \
  -DLLAMA_BUILD_COMMIT="$(cat "$src/.attnzoo-commit")" >&2 || die "cmake configure failed"
nice -n 10 "$venv/bin/cmake" --build "$src/build" -j 2 --target "${tools[@]}" >&2 || die "build failed"
for t in "${tools[@]}"; do [ -x "$bin/$t" ] || die "missing $bin/$t after the build"; done
echo "$bin"
