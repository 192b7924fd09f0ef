#!/usr/bin/env bash
# Before/after comparison of two kvflash builds on a shared, noisy machine: the two binaries run
# alternately, ROUNDS times, on the demo workloads and two `kvflash ifa` shapes, so both see the
# same load. Which one runs first alternates by round, so that an effect of running second (a
# warmer or a more fragmented machine) cannot bias the ratio. Prints one line per run: "<label>
# <workload> <shape> <ms per call>"; take medians.
#   ROUNDS=10 bench/ab_cli.sh <before/kvflash> <after/kvflash> > runs.txt
set -euo pipefail
B=$1
A=$2
for round in $(seq 1 ${ROUNDS:-8}); do
  order="before after"
  [ $((round % 2)) = 0 ] && order="after before"
  for label in $order; do
    bin=$B; [ $label = after ] && bin=$A
    $bin demo --no-bandwidth --iters 15 2>&1 | awk -v l=$label '/ms\/call/ { for (i=1;i<=NF;i++) if ($i=="ms/call") { print l, $1"-"$4, "demo", $(i-1) } }'
    $bin ifa --batch 8 --kv-len 4096 --heads 32 --kv-heads 8 --dim 128 --kv-dtype bf16 --block-size 0 --iters 20 --no-bandwidth 2>&1 | awk -v l=$label '/ms\/call/ { for (i=1;i<=NF;i++) if ($i=="ms/call") print l, "ifa-contig-bf16", "b8x4096", $(i-1) }'
    $bin ifa --batch 8 --kv-len 4096 --heads 32 --kv-heads 8 --dim 128 --kv-dtype int8 --block-size 128 --iters 20 --no-bandwidth 2>&1 | awk -v l=$label '/ms\/call/ { for (i=1;i<=NF;i++) if ($i=="ms/call") print l, "ifa-paged-int8", "b8x4096", $(i-1) }'
  done
done
