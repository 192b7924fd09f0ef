#!/usr/bin/env bash
# The kvflash program: one small problem of every operator it runs (IncreFlashAttention, the
# lightning indexer, SparseFlashAttention, FusedInferAttentionScore decode, PromptFlashAttention
# prefill, the KV cache write), each checked by the program (against the fp64 reference; the cache
# write byte for byte) and timed, with the results as JSON; then the JSON read back to show that
# every problem passed. Exits non-zero when a check fails.
#
#   bash examples/cli.sh [path/to/kvflash]       # default: the kvflash on PATH (pip install .)
#
# `kvflash bench --help` lists every key of a problem string, `kvflash demo` runs the embedded
# model workloads, `kvflash info` reports the machine's read bandwidth and compute peaks.
set -euo pipefail
kvflash=${1:-kvflash}
json=$(mktemp --suffix=.json)
trap 'rm -f "$json"' EXIT

# Problem strings: operator, then key=value (or key+number) items; --no-bandwidth skips the
# bandwidth probe, --iters 2 keeps it short (a real measurement: docs/perf.md).
"$kvflash" bench --iters 2 --no-bandwidth --json "$json" \
  ifa:b2,s300,n8,kvn2,d128,kv=bf16,paged=64 \
  li:b2,s1024,n16,topk64,next1,paged=64,kv=bf16 \
  sfa:b2,topk64,s512,n16,blk1,paged=64,kv=bf16 \
  fia:b2,q1,s300,n8,kvn2,d64,mode=3,paged=16 \
  pfa:b1,q96,n8,kvn2,d64,mode=3 \
  kvcache:t64,kvn2,d128,paged=16,kv=bf16

# The JSON has one row per problem with its check's verdict.
python3 - "$json" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))
rows = run["results"]
for r in rows:
    print(f"{r['problem']:45s} {r['ms_per_call']:8.3f} ms/call  check passed: {r['check_passed']}")
assert len(rows) == 6 and all(r["check_passed"] for r in rows), "a problem failed its check"
print("cli: PASS")
PY
