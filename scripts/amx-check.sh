#!/usr/bin/env bash
# The AMX check: one command for the first session on a machine whose CPU exposes AMX (Sapphire
# Rapids or later, `grep -w amx_tile /proc/cpuinfo`). It prints the AMX detection, runs every test
# with the `amx` level in reach (the hardware suites that skip elsewhere, at the full tier), the
# cpu-amx entries against the level below on the default sweep with the peers, and P·V on tiles
# against P·V on FMAs, and writes every log and JSON to one folder (docs/perf-log.md, "The AMX check",
# says what to record from it).
#   bash scripts/amx-check.sh [OUT]          # OUT defaults to build/amx-check-<date>
# Environment: AMX_CHECK_THREADS (default: nproc), AMX_CHECK_ITERS (timed calls per row, default
# 10), AMX_CHECK_ROUNDS (P·V A/B rounds, default 6), AMX_CHECK_SKIP_BENCH=1 (correctness only).
# Without AMX it stops after the detection (exit 77), saying what is missing.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/amx-check-$(date +%Y%m%d-%H%M)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
threads=${AMX_CHECK_THREADS:-$(nproc)}
iters=${AMX_CHECK_ITERS:-10}
rounds=${AMX_CHECK_ROUNDS:-6}
summary=$out/summary.txt
: >"$summary"
failures=0

say() { echo "$*" | tee -a "$summary"; }
# step NAME CMD...: runs CMD with its output in $out/NAME.log, one PASS/FAIL line in the summary.
step() {
  local name=$1; shift
  local t0=$SECONDS rc=0
  echo "=== $name: $*" >"$out/$name.log"
  "$@" >>"$out/$name.log" 2>&1 || rc=$?
  if [ "$rc" -eq 0 ]; then
    say "PASS  $name ($((SECONDS - t0)) s)"
  else
    say "FAIL  $name (exit $rc, $((SECONDS - t0)) s; log: $out/$name.log)"
    failures=$((failures + 1))
  fi
  return 0
}

say "=== AMX check, $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet 2>/dev/null || echo ' (+ uncommitted changes)')"
say "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), family $(grep -m1 'cpu family' /proc/cpuinfo | cut -d: -f2 | tr -d ' ') model $(grep -m1 '^model[[:space:]]' /proc/cpuinfo | cut -d: -f2 | tr -d ' '), $(nproc) cpus"
say "cpuinfo AMX flags: $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep '^amx' | tr '\n' ' ')"
say "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

bash scripts/setup.sh --tests >"$out/setup.log" 2>&1 || { say "FAIL  setup (see $out/setup.log)"; exit 1; }
cmake --preset ci >"$out/build.log" 2>&1 && cmake --build --preset ci -j"$(nproc)" >>"$out/build.log" 2>&1 ||
  { say "FAIL  build (see $out/build.log)"; exit 1; }
bin=build/ci/kvflash
tests=build/ci/tests

# 1. Detection: what the library sees, and why a level is missing.
"$bin" info >"$out/info.txt" 2>&1
cat "$out/info.txt" | tee -a "$summary"
KVFLASH_VERBOSE=dispatch "$bin" bench ifa:b1,s4096,n32,kvn8,d128,kv=bf16 --iters 2 >"$out/dispatch-ifa.log" 2>&1
KVFLASH_VERBOSE=dispatch "$bin" bench sfa:b1,topk512,s2048,n16,blk1,paged=64,kv=bf16 --iters 2 >"$out/dispatch-sfa.log" 2>&1
say "dispatch (ifa): $(grep -m1 'ran ' "$out/dispatch-ifa.log" || echo 'no dispatch line')"
say "dispatch (sfa): $(grep -m1 'ran ' "$out/dispatch-sfa.log" || echo 'no dispatch line')"
if ! grep -q 'ran cpu-amx' "$out/dispatch-ifa.log"; then
  say "the amx level is not in reach here (see the dispatch line above): nothing more to check"
  exit 77
fi

# 2. Correctness on the CPU's tiles. The whole ci suite first (every test at the highest level,
# amx; the sweeps force each entry, cpu-amx included), then the hardware suites at the full tier,
# then the fuzz corpora through the real entries (fuzz_cpp_api runs the available backends).
step ctest-ci ctest --preset ci -j"$(nproc)"
step amx-hardware-full env KVFLASH_TEST_TIER=full "$tests/cpu_tests" --gtest_filter='*Amx*'
step backend-ops-full env KVFLASH_TEST_TIER=full "$tests/misc_tests" \
  --gtest_filter='*BackendOps*:IfaNonFinite.*:SfaNonFinite.*'
step determinism env KVFLASH_TEST_TIER=full "$tests/ifa_tests" --gtest_filter='*IfaDeterminism*'
step determinism-sfa "$tests/sfa_tests" --gtest_filter='*SfaDeterminism*'
step no-alloc "$tests/no_alloc_test"
if [ -x build/ci/fuzz/fuzz_cpp_api ]; then
  step fuzz-replay-cpp-api build/ci/fuzz/fuzz_cpp_api fuzz/corpus/cpp_api
fi
# libFuzzer on the real entries (the asan preset: clang, ASan + UBSan), where the highest level,
# amx, is the one that runs: the C++ API and aclnn targets of the operators with a cpu-amx entry.
fuzz_seconds=${AMX_CHECK_FUZZ_SECONDS:-60}
if [ "$fuzz_seconds" -gt 0 ]; then
  step fuzz-amx env KVFLASH_FUZZ_TARGETS="cpp_api ifa_aclnn sfa_aclnn fia_api" KVFLASH_FUZZ_JOBS=1 \
    bash scripts/fuzz.sh "$fuzz_seconds"
  cat build/fuzz-run/*.summary >>"$out/fuzz-amx.log" 2>/dev/null || true
fi
for op in "ifa:b1,s4096,n32,kvn8,d128,kv=bf16" "ifa:b4,s4096,n32,kvn4,d128,kv=fp16" \
          "ifa:b4,s4096,n28,kvn4,d128,kv=int8" "sfa:b4,topk2048,s8192,n128,blk1,paged=64,kv=bf16"; do
  step "bench-check-${op%%:*}-$(echo "${op#*:}" | tr ',=' '_-')" "$bin" bench "$op" --iters 2 --threads "$threads"
done

if [ "${AMX_CHECK_SKIP_BENCH:-0}" = 1 ]; then
  say "=== benchmarks skipped (AMX_CHECK_SKIP_BENCH=1); $failures failed step(s)"
  [ "$failures" -eq 0 ]
  exit
fi

# 3. Speed: the default sweep with its peers, at amx and at the level below, in one session, each
# problem interleaved with its peers (bench/peers.py); then the sfa rows the same way.
say "load average before the benchmarks: $(cut -d' ' -f1-3 /proc/loadavg)"
for isa in amx avx512bf16; do
  step "sweep-$isa" env KVFLASH_MAX_ISA=$isa python3 bench/peers.py --kvflash "$bin" --sweep default \
    --threads "$threads" --iters "$iters" --out "$out/sweep-$isa.json"
  python3 bench/report.py "$out/sweep-$isa.json" --csv "$out/sweep-$isa.csv" >"$out/sweep-$isa.report.txt" 2>&1 || true
done

# 4. P·V on tiles (the cpu-amx default) against P·V on FMAs: a second build, alternated runs.
pv_build=build/amx-pvfma
step build-pvfma bash -c "cmake -S . -B $pv_build -G Ninja -DCMAKE_BUILD_TYPE=Release -DKVFLASH_BUILD_TESTS=OFF \
  -DCMAKE_CXX_FLAGS=-DKVFLASH_AMX_IFA_PV_FMA=1 >/dev/null && cmake --build $pv_build -j$(nproc) --target kvflash_cli"
if [ -x "$pv_build/kvflash" ]; then
  ROUNDS=$rounds bash bench/ab_cli.sh "$pv_build/kvflash" "$bin" >"$out/pv-ab.txt" 2>"$out/pv-ab.err"
  # Medians per workload: before = P·V on FMAs, after = P·V on tiles.
  python3 - "$out/pv-ab.txt" <<'PY' | tee -a "$summary"
import statistics, sys, collections
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    label, work, shape, ms = line.split()
    rows[(work, shape, label)].append(float(ms))
for (work, shape) in sorted({(w, s) for w, s, _ in rows}):
    b, a = rows[(work, shape, "before")], rows[(work, shape, "after")]
    if b and a:
        mb, ma = statistics.median(b), statistics.median(a)
        print(f"P·V FMAs vs tiles  {work:28s} {shape:8s} {mb:8.3f} ms {ma:8.3f} ms  tiles/FMAs {ma / mb:.3f}")
PY
fi
say "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
say "=== $failures failed step(s); everything is in $out"
[ "$failures" -eq 0 ]
