#!/usr/bin/env python3
"""kvflash IFA next to PyTorch SDPA on the same dense decode shapes (issue 9's ">= 1.5x SDPA").

Joins kvflash_gpu_ifa_bench's contiguous rows with bench/gpu_sdpa.py's rows on (model, batch,
kv_len, dtype) and prints one JSON line per shape both measured: both median times, kvflash's
fraction of the read ceiling and the speed-up over SDPA. Run by scripts/gpu-check.sh.

    python3 bench/gpu_compare.py ifa_bench.jsonl sdpa.jsonl
"""
import json
import sys

# gpu_sdpa.py writes torch dtype names, the kvflash bench kvflash's.
DTYPES = {"bfloat16": "bf16", "float16": "fp16"}


def rows(path):
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                yield json.loads(line)


def main():
    if len(sys.argv) != 3:
        raise SystemExit("usage: gpu_compare.py IFA_JSONL SDPA_JSONL")
    ifa = {}
    for r in rows(sys.argv[1]):
        if r.get("cache") == "contiguous" and "median_ms" in r:
            ifa[(r["model"], r["batch"], r["kv_len"], r["kv_dtype"])] = r
    for s in rows(sys.argv[2]):
        key = (s["model"], s["batch"], s["kv_len"], DTYPES.get(s["dtype"], s["dtype"]))
        k = ifa.get(key)
        if k is None:
            continue
        print(json.dumps({"model": key[0], "batch": key[1], "kv_len": key[2], "dtype": key[3],
                          "kvflash_ms": k["median_ms"], "sdpa_ms": s["median_ms"],
                          "kvflash_of_ceiling": k.get("of_ceiling"),
                          "speedup_vs_sdpa": round(s["median_ms"] / k["median_ms"], 3)}))


if __name__ == "__main__":
    main()
