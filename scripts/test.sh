#!/usr/bin/env bash
# Every test: set up, then the suite in a warnings-as-errors release build, the Python package
# (built with `pip install`, tested with pytest), the multithreaded tests under ThreadSanitizer, then
# one clang build with ASan+UBSan and libFuzzer's instrumentation (the asan preset) for a bounded run
# of every fuzz target (scripts/fuzz.sh) and the suite again under ASan+UBSan (LeakSanitizer
# included; last, so that CTest's summary of the whole suite closes the log). Each phase prints its
# wall and CPU time.
# KVFLASH_TEST_SANITIZERS=0 skips the sanitizer passes and the fuzz run; KVFLASH_TEST_FUZZ=0 skips
# the fuzz run; KVFLASH_TEST_FUZZ_SECONDS sets its time per target (default 15);
# KVFLASH_TEST_PYTHON=0 skips the Python package.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
# CPU seconds (user + system) of the finished child processes, in $cpu: a phase's CPU time does not
# depend on what else runs on the machine, its wall time does. (`times` in this shell, not in a
# command substitution's subshell.)
times_file=$(mktemp)
cpu_seconds() {
  times >"$times_file"
  cpu=$(awk 'NR == 2 { n = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); n += a[1] * 60 + a[2] }
                       printf "%d", n }' "$times_file")
}
trap '{ kill $(jobs -p) 2>/dev/null || true; }; cpu_seconds; rm -f "$times_file"; echo "=== total time: $(( $(date +%s) - start )) s (CPU $cpu s)"' EXIT
bash scripts/setup.sh --tests
jobs=$(nproc)
# The Python environment (torch is a few GB to download and unpack: mostly network and disk) is
# made in the background while the ci preset compiles; the python phase waits for it and prints
# its log.
python_setup_log=$(mktemp)
python_setup_pid=
if [ "${KVFLASH_TEST_PYTHON:-1}" != 0 ]; then
  bash scripts/setup_python.sh >"$python_setup_log" 2>&1 &
  python_setup_pid=$!
fi

phase_start=$start
phase_cpu=0
phase_done() {
  local now cpu
  now=$(date +%s)
  cpu_seconds
  echo "=== [$1] done in $((now - phase_start)) s (CPU $((cpu - phase_cpu)) s)"
  phase_start=$now
  phase_cpu=$cpu
}

run_preset() {
  local preset=$1
  echo "=== [$preset] configure + build"
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" -j"$jobs"
  echo "=== [$preset] test"
  ctest --preset "$preset" -j"$jobs"
}

run_python() {
  local venv=${KVFLASH_VENV:-.venv}
  echo "=== [python] environment ($venv: pyproject.toml's build requirements and test extra; made in the background since the start)"
  local setup_rc=0
  wait "$python_setup_pid" || setup_rc=$?
  cat "$python_setup_log"
  rm -f "$python_setup_log"
  [ "$setup_rc" -eq 0 ] || return "$setup_rc"
  echo "=== [python] pip install --no-build-isolation . (in build/ci, with the ci preset's settings)"
  # --no-index: with the environment in place the package build downloads nothing. The package is
  # built in the ci preset's build tree with that preset's settings (these defines override the
  # pyproject.toml ones that differ: tests, the CUDA backend; warnings are errors): the
  # configuration adds the extension's targets and changes no flag of the others, so ninja reuses
  # the library, reference and kvflash program objects the ci phase compiled and builds only the
  # extension (docs/design.md, "The PyTorch package"). The wheel so built carries the CUDA
  # backend, compiled for sm_80 (cudart static: without a GPU its entries report unavailable).
  local ci_settings=(-C cmake.define.KVFLASH_WERROR=ON -C cmake.define.KVFLASH_BUILD_TESTS=ON
                     -C cmake.define.KVFLASH_CUDA=AUTO)
  CMAKE_BUILD_PARALLEL_LEVEL=$jobs "$venv/bin/python" -m pip install -q --no-build-isolation \
    --no-index -C build-dir=build/ci "${ci_settings[@]}" .
  echo "=== [python] the test-only reference library"
  cmake --build build/ci --target kvflash_torch_testing -j"$jobs"
  echo "=== [python] pytest"
  local rc=0
  KVFLASH_TESTING_LIB=$PWD/build/ci/python/libkvflash_torch_testing.so \
    "$venv/bin/python" -m pytest -p no:cacheprovider -q python/tests || rc=$?
  if [ "$rc" -eq 5 ]; then
    echo "python: pytest collected no tests" >&2
  fi
  return "$rc"
}

run_preset ci
phase_done ci
if [ "${KVFLASH_TEST_PYTHON:-1}" != 0 ]; then
  run_python
  phase_done python
fi
if [ "${KVFLASH_TEST_SANITIZERS:-1}" != 0 ]; then
  # TSan: the tests whose point is concurrency (the pool, determinism across thread counts,
  # streams, the many-threads stress).
  tsan_tests=(cpu_thread_pool_test cpu_parallel_backend_test ifa_determinism_test sfa_determinism_test
              aclnn_runtime_test aclnn_ifa_test aclnn_sfa_test stress_test)
  echo "=== [tsan] configure + build"
  cmake --preset tsan >/dev/null
  cmake --build --preset tsan -j"$jobs" --target "${tsan_tests[@]}" aclnn_exit_program
  echo "=== [tsan] test"
  for t in "${tsan_tests[@]}"; do
    TSAN_OPTIONS=halt_on_error=1 "build/tsan/tests/$t" --gtest_brief=1
  done
  # Process teardown with work queued, in every order (tests/aclnn_exit.cmake).
  ctest --preset tsan -L exit -j"$jobs"
  phase_done tsan
  # One clang build serves the ASan + UBSan suite and the fuzz targets (the asan preset: every
  # object carries libFuzzer's coverage instrumentation, the fuzz_* programs link libFuzzer).
  echo "=== [asan] configure + build (the suite and the fuzz targets)"
  cmake --preset asan >/dev/null
  cmake --build --preset asan -j"$jobs"
  phase_done "asan build"
  if [ "${KVFLASH_TEST_FUZZ:-1}" != 0 ]; then
    bash scripts/fuzz.sh "${KVFLASH_TEST_FUZZ_SECONDS:-15}"
    phase_done fuzz
  fi
  # Last, so that CTest's summary closes the log.
  echo "=== [asan] test"
  ctest --preset asan -j"$jobs"
  phase_done "asan test"
fi
