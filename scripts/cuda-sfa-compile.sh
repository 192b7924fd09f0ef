#!/usr/bin/env bash
# Compiles the SFA CUDA kernels (src/cuda/sfa/sfa_kernel.cu: the prologue and the SIMT fallback;
# src/cuda/sfa/sfa_mma.cu: the mma.sync path) for sm_80 and sm_90a with every warning an error, as
# C++20 like the CMake CUDA build (cmake/cuda.cmake), without configuring it, and prints each
# kernel's registers and spills (ptxas -v). Needs nvcc (CUDA 12.4+); runs nothing.
# Exit status: nvcc's.
set -euo pipefail
cd "$(dirname "$0")/.."
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
cuda_include="$(dirname "$(command -v nvcc)")/../include"
# Both host compilers of CI (g++ and clang++), when present. The toolkit's headers are system
# headers (as CMake passes them), so only kvflash's code is held to the warnings.
for cxx in g++ clang++; do
  command -v "$cxx" >/dev/null || continue
  for src in src/cuda/sfa/sfa_kernel.cu src/cuda/sfa/sfa_mma.cu; do
    nvcc -ccbin "$cxx" -std=c++20 -O3 -Werror all-warnings \
      -Xcompiler -Wall,-Wextra,-Wno-unused-parameter -isystem "$cuda_include" \
      -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90a,code=sm_90a -Xptxas -v \
      -Iinclude -Isrc -c "$src" -o "$out/$(basename "$src").o" 2>"$out/ptxas.txt" ||
      { cat "$out/ptxas.txt"; exit 1; }
    # One line per kernel and architecture: registers, spills, the (demangled-enough) name.
    # Mangled names: <length><name>, then the template arguments (ILb1E = <true>: bf16).
    awk '/Compiling entry function/ { match($0, /[0-9]+(resolve_kernel|sfa_expand_kernel|sfa_mma_kernel|sfa_kernel)(ILb[01]E)?/);
                                      name = substr($0, RSTART, RLENGTH); sub(/^[0-9]+/, "", name);
                                      sub(/ILb0E/, "<fp16>", name); sub(/ILb1E/, "<bf16>", name);
                                      match($0, /sm_[0-9a]+/); arch = substr($0, RSTART, RLENGTH) }
         /spill stores/ { spill = $5 " B spill stores, " $9 " B spill loads" }
         /Used [0-9]+ registers/ { print "  " arch " " name ": " $5 " registers, " spill }' \
      "$out/ptxas.txt"
    echo "$src: compiled with $cxx for sm_80 and sm_90a (not run)"
  done
done
