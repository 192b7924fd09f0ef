#!/usr/bin/env bash
# Main job: set up, build the library and the kvflash program in the release preset's tree, and
# run `kvflash demo` on its embedded workload (arguments go to it: --quick, --threads N, ...).
# It installs only what that build needs (scripts/setup.sh without --tests) and builds nothing
# else: no test suite and no CUDA backend, even where nvcc is installed (the demo runs on the CPU).
# It leaves the program at build/release/kvflash and builds every installed target (the program
# and libkvflash.so: kvflash_installed, cmake/install.cmake), so that
# `cmake --install build/release` works after it. A later `cmake --preset release` turns the tests
# and CUDA's AUTO back on (CMakePresets.json sets both).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake --preset release -DKVFLASH_BUILD_TESTS=OFF -DKVFLASH_CUDA=OFF >/dev/null
cmake --build --preset release -j"$(nproc)" --target kvflash_installed
exec build/release/kvflash demo "$@"
