#!/usr/bin/env bash
# Main job: set up, build the release preset, and run `kvflash demo` on its embedded workload.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release -j"$(nproc)" --target kvflash_cli
exec build/release/kvflash demo "$@"
