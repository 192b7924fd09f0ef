#!/usr/bin/env bash
# Every test: set up, then the suite in a warnings-as-errors release build and again under
# ASan+UBSan (LeakSanitizer included). KVFLASH_TEST_SANITIZERS=0 skips the sanitizer pass.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
jobs=$(nproc)

run_preset() {
  local preset=$1
  echo "=== [$preset] configure + build"
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j"$jobs"
  echo "=== [$preset] test"
  ctest --preset "$preset" -j"$jobs"
}

run_preset ci
if [ "${KVFLASH_TEST_SANITIZERS:-1}" != 0 ]; then
  run_preset asan
fi
