#!/usr/bin/env bash
# Installs what building and testing kvflash needs on a fresh Debian 12 machine (idempotent: it only
# calls apt-get when a package is missing).
set -euo pipefail

# What each is for: cmake, ninja-build, gcc and g++ build (the presets use the Ninja generator; the
# C compiler builds the C consumer test; make is the generator of the find_package consumer test,
# tests/aclnn, and of `pip install .` without ninja); binutils' nm and c++filt check the exported
# symbols; pkg-config builds the pkg-config consumer tests; GoogleTest is the test framework;
# CLI11 parses the kvflash program's options. The sanitizer builds (the asan preset, which holds
# the fuzz targets, and the tsan preset) need clang 14 with its runtime libraries
# (libclang-rt-14-dev carries libFuzzer and the sanitizers) and llvm-14 (llvm-symbolizer for stack
# traces; llvm-profdata / llvm-cov).
packages=(cmake ninja-build make gcc g++ binutils pkg-config libgtest-dev libcli11-dev
          clang-14 libclang-rt-14-dev llvm-14)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}"
fi

# The CUDA backend (KVFLASH_CUDA=AUTO) builds when nvcc is found in /usr/local/cuda/bin or PATH; it
# is preinstalled on the development and CI machines and not installed here (CUDA 13 comes from
# NVIDIA's repository, not Debian's). Without it the build silently turns the backend off.
if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
  echo "setup: nvcc found: the CUDA backend will build"
else
  echo "setup: no nvcc: the CUDA backend is off (CPU-only build)"
fi
