#!/usr/bin/env bash
# Installs what building kvflash needs on a fresh Debian 12 machine (idempotent: it only calls
# apt-get when a package is missing).
#
#   bash scripts/setup.sh           the library and the kvflash program: what scripts/demo.sh
#                                   builds (cmake, ninja-build, gcc, g++, CLI11)
#   bash scripts/setup.sh --tests   also what the test suite, the sanitizer builds and the fuzz
#                                   targets need: what scripts/test.sh builds
set -euo pipefail

tests=0
case "${1:-}" in
  "") ;;
  --tests) tests=1 ;;
  *) echo "usage: bash scripts/setup.sh [--tests]" >&2; exit 2 ;;
esac

# The library and the program: cmake, ninja-build, gcc and g++ build (the presets use the Ninja
# generator; CMakeLists.txt's project() enables C, which the C consumer test uses); CLI11 parses
# the kvflash program's options.
packages=(cmake ninja-build gcc g++ libcli11-dev)
# The tests: make is the generator of the find_package consumer test (tests/aclnn) and of
# `pip install .` without ninja; binutils' nm and c++filt check the exported symbols; pkg-config
# builds the pkg-config consumer tests; GoogleTest is the test framework. The sanitizer builds
# (the asan preset, which holds the fuzz targets, and the tsan preset) need clang 14 with its
# runtime libraries (libclang-rt-14-dev carries libFuzzer and the sanitizers) and llvm-14
# (llvm-symbolizer for stack traces; llvm-profdata / llvm-cov).
if [ "$tests" = 1 ]; then
  packages+=(make binutils pkg-config libgtest-dev clang-14 libclang-rt-14-dev llvm-14)
fi
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

# The CUDA backend (KVFLASH_CUDA=AUTO in the ci, debug and release presets) builds when nvcc is
# found in /usr/local/cuda/bin or PATH; it is preinstalled on the development and CI machines and
# not installed here (CUDA 13 comes from NVIDIA's repository, not Debian's). Without it the build
# silently turns the backend off. scripts/demo.sh never builds it.
if [ "$tests" = 1 ]; then
  if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
    echo "setup: nvcc found: the CUDA backend will build"
  else
    echo "setup: no nvcc: the CUDA backend is off (CPU-only build)"
  fi
fi
