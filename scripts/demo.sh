#!/usr/bin/env bash
# Main job: set up, build the release preset, and run `kvflash demo` on its embedded workload.
# It leaves the program at build/release/kvflash, and builds every installed target (the program
# and libkvflash.so: kvflash_installed, cmake/install.cmake), so that
# `cmake --install build/release` works after it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release -j"$(nproc)" --target kvflash_installed
exec build/release/kvflash demo "$@"
