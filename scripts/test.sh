#!/usr/bin/env bash
# Every test: set up, then the suite in a warnings-as-errors release build, again under ASan+UBSan
# (LeakSanitizer included), and the multithreaded tests under ThreadSanitizer (before ASan, so
# that CTest's summary of the whole suite is the last line).
# KVFLASH_TEST_SANITIZERS=0 skips the sanitizer passes.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
trap 'echo "=== total time: $(( $(date +%s) - start )) s"' EXIT
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
  # TSan: the tests whose point is concurrency (the pool, determinism across thread counts, streams).
  tsan_tests=(cpu_thread_pool_test cpu_parallel_backend_test ifa_determinism_test sfa_determinism_test
              aclnn_runtime_test aclnn_ifa_test aclnn_sfa_test)
  echo "=== [tsan] configure + build"
  cmake --preset tsan >/dev/null
  cmake --build --preset tsan -j"$jobs" --target "${tsan_tests[@]}" aclnn_exit_program
  echo "=== [tsan] test"
  for t in "${tsan_tests[@]}"; do
    TSAN_OPTIONS=halt_on_error=1 "build/tsan/tests/$t" --gtest_brief=1
  done
  # Process teardown with work queued, in every order (tests/aclnn_exit.cmake).
  ctest --preset tsan -L exit -j"$jobs"
  # Last, so that CTest's summary closes the log.
  run_preset asan
fi
