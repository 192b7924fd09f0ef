#!/usr/bin/env bash
# Compiles the SFA CUDA kernel (src/cuda/sfa_kernel.cu) for sm_80 and sm_90a with every warning an
# error, as C++20 like the CMake CUDA build (cmake/cuda.cmake), without configuring it.
# Needs nvcc (CUDA 12.4+); runs nothing. Exit status: nvcc's.
set -euo pipefail
cd "$(dirname "$0")/.."
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
cuda_include="$(dirname "$(command -v nvcc)")/../include"
# Both host compilers of CI (g++ and clang++), when present. The toolkit's headers are system
# headers (as CMake passes them), so only kvflash's code is held to the warnings.
for cxx in g++ clang++; do
  command -v "$cxx" >/dev/null || continue
  nvcc -ccbin "$cxx" -std=c++20 -O3 -Werror all-warnings \
    -Xcompiler -Wall,-Wextra,-Wno-unused-parameter -isystem "$cuda_include" \
    -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90a,code=sm_90a \
    -Iinclude -Isrc -c src/cuda/sfa_kernel.cu -o "$out/sfa_kernel.o"
  echo "src/cuda/sfa_kernel.cu: compiled with $cxx for sm_80 and sm_90a (not run)"
done
