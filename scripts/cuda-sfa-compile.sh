#!/usr/bin/env bash
# Compiles the SFA CUDA kernel (src/cuda/sfa_kernel.cu) for sm_80 and sm_90a with every warning an
# error, without the CMake CUDA build (issue 9's KVFLASH_CUDA), which it is to be wired into.
# Needs nvcc (CUDA 12.4+); runs nothing. Exit status: nvcc's.
set -euo pipefail
cd "$(dirname "$0")/.."
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
nvcc -std=c++20 -O3 -Werror all-warnings \
  -Xcompiler -Wall,-Wextra,-Wno-unused-parameter \
  -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90a,code=sm_90a \
  -Iinclude -Isrc -c src/cuda/sfa_kernel.cu -o "$out/sfa_kernel.o"
echo "src/cuda/sfa_kernel.cu: compiled for sm_80 and sm_90a (not run)"
