#!/usr/bin/env bash
# Builds the fuzz targets in the asan preset's build (clang, ASan + UBSan, libFuzzer: the build
# whose tests scripts/test.sh runs as well) and runs every fuzz target of fuzz/
# (docs/testing.md), each on its committed corpus plus new inputs: one per core at a time for the
# bounded run, one after another for the campaign (KVFLASH_FUZZ_JOBS overrides either).
#
#   scripts/fuzz.sh [seconds]              bounded run, default 15 s per target (scripts/test.sh);
#                                          new inputs go to a scratch corpus under build/fuzz-run
#   scripts/fuzz.sh --campaign [seconds]   the long campaign (default 900 s per target): corpora
#                                          kept in build/fuzz-campaign/<target>, logs beside them
#
# Fails on any crash, leak, timeout, out-of-memory or invariant violation; the reproducer is
# written to build/fuzz-artifacts/<target>-crash-* (replay: build/asan/fuzz/fuzz_<target> FILE).
# The targets are the fuzz/fuzz_<target>.cpp files (fuzz/CMakeLists.txt builds one program each);
# KVFLASH_FUZZ_TARGETS overrides the list.
set -euo pipefail
cd "$(dirname "$0")/.."

campaign=0
if [ "${1:-}" = "--campaign" ]; then
  campaign=1
  shift
fi
secs=${1:-$([ $campaign = 1 ] && echo 900 || echo 15)}
all_targets=()
for src in fuzz/fuzz_*.cpp; do
  name=${src#fuzz/fuzz_}
  all_targets+=("${name%.cpp}")
done
read -r -a targets <<<"${KVFLASH_FUZZ_TARGETS:-${all_targets[*]}}"

echo "=== [fuzz] configure + build"
cmake --preset asan >/dev/null
cmake --build --preset asan -j"$(nproc)" --target fuzz_all
if [ $campaign = 1 ]; then
  work=build/fuzz-campaign
else
  work=build/fuzz-run
  rm -rf "$work"
fi
mkdir -p "$work" build/fuzz-artifacts
# LeakSanitizer on; a small quarantine keeps the resident size far below -rss_limit_mb.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:quarantine_size_mb=64:malloc_context_size=20}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export KVFLASH_FUZZ_STATS=1
# One target: its log, then its summary (executions, rate, coverage: edges "cov", features "ft",
# corpus, what ran) in $work/<target>.summary; fails when the fuzzer found something.
fuzz_one() {
  local t=$1 log="$work/$1.log" start rc=0 execs rate cov extra=()
  mkdir -p "$work/$t"
  [ -f "fuzz/$t.dict" ] && extra+=("-dict=fuzz/$t.dict")
  start=$(date +%s)
  build/asan/fuzz/fuzz_"$t" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=30 \
      -max_len=512 -len_control=0 -print_final_stats=1 \
      -artifact_prefix=build/fuzz-artifacts/"$t"- "${extra[@]}" \
      "$work/$t" "fuzz/corpus/$t" >"$log" 2>&1 || rc=$?
  {
    if [ $rc -ne 0 ]; then
      echo "=== [fuzz] $t FAILED: log $log"
      grep -E -B2 -A30 "invariant violated|ERROR: |runtime error" "$log" | head -80 || tail -60 "$log"
    fi
    execs=$(grep -E "stat::number_of_executed_units" "$log" | awk '{print $2}')
    rate=$(grep -E "stat::average_exec_per_sec" "$log" | awk '{print $2}')
    cov=$(grep -E "^#[0-9]+" "$log" | tail -1 | grep -oE "cov: [0-9]+ ft: [0-9]+ corp: [0-9]+" || true)
    echo "=== [fuzz] $t: ${execs:-?} executions (${rate:-?}/s) in $(($(date +%s) - start)) s; $cov"
    grep -E "^fuzz stats" "$log" | tail -1 || true
  } >"$work/$t.summary"
  return $rc
}

# The targets run side by side, KVFLASH_FUZZ_JOBS at a time: by default one per core for the bounded
# run (each fuzzer is one process on one core, so each gets the same ${secs} s of a core as when
# they ran one after another), one at a time for the campaign.
fuzz_jobs=${KVFLASH_FUZZ_JOBS:-$([ $campaign = 1 ] && echo 1 || nproc)}
status=0
running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$fuzz_jobs" ]; then
    wait -n || status=1
    running=$((running - 1))
  fi
  echo "=== [fuzz] $t for ${secs} s"
  fuzz_one "$t" &
  running=$((running + 1))
done
while [ "$running" -gt 0 ]; do
  wait -n || status=1
  running=$((running - 1))
done
for t in "${targets[@]}"; do
  cat "$work/$t.summary"
done
exit $status
