#!/usr/bin/env bash
# Installs the LibTorch that burn-tch 0.22.1 links against (PyTorch 2.9.0, CPU use) into a
# venv, slimmed for linking: no CUDA wheels beyond the two libraries libtorch_cpu.so needs,
# and the CUDA-only torch libraries removed so torch-sys links the CPU library alone.
#
#   scripts/install-libtorch.sh [DIR]     (default: ~/.cache/attnzoo/libtorch-venv)
#
# Prints the environment to build and run with `--features tch`:
#   export LIBTORCH=DIR/lib/python3.X/site-packages/torch LIBTORCH_CXX11_ABI=1
#   export LD_LIBRARY_PATH=$LIBTORCH/lib:$LD_LIBRARY_PATH
# The venv is for linking only: `import torch` fails in it.
set -euo pipefail
venv=${1:-${ATTNZOO_CACHE:-$HOME/.cache/attnzoo}/libtorch-venv}
python=${PYTHON:-python3}

if [ ! -x "$venv/bin/pip" ]; then
  "$python" -m venv "$venv"
fi
torch_dir=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/torch
if [ ! -f "$torch_dir/lib/libtorch_cpu.so" ]; then
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps \
    torch==2.9.0 nvidia-cuda-runtime-cu12==12.8.90 nvidia-cuda-cupti-cu12==12.8.90
fi
rm -f "$torch_dir"/lib/libtorch_cuda*.so "$torch_dir"/lib/libc10_cuda.so \
      "$torch_dir"/lib/libtorch_nvshmem.so "$torch_dir"/lib/libcaffe2_nvrtc.so
# libtorch_cpu.so finds the CUDA runtime and CUPTI through rpaths into ../../nvidia/*/lib.
echo "export LIBTORCH=$torch_dir LIBTORCH_CXX11_ABI=1"
echo "export LD_LIBRARY_PATH=$torch_dir/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
