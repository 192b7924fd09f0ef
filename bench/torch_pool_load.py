#!/usr/bin/env python3
"""The PyTorch operators on a quiet and on a loaded machine, on kvflash's own thread pool and on
torch's intra-op pool (kvflash.set_thread_pool; docs/python.md "Threads", docs/perf.md).

Decode calls as a serving loop makes them (IFA over a paged bf16 cache, FIA's TND decode over a
paged cache as vllm-ascend calls it, a small and a large batch each), plus torch's own `x + 1`
for comparison, each timed call by call through the torch ops. Four conditions: each pool, quiet
and under a controlled background load: one busy process per core (a Python spin loop at the
benchmark's priority, or --load-nice N, started and stopped by this script). The pools alternate
within each repeat, so both see the same machine. Prints the median per-call time and the 90th
percentile of each (op, pool, load), and the loaded/quiet ratio of the medians; --json writes
every number. It also checks that both pools give the same bits.

    python3 bench/torch_pool_load.py [--threads N] [--calls 200] [--repeats 5] [--load N]
                                     [--load-nice 0] [--json FILE] [--quick]

--threads sets torch.set_num_threads (default: torch's own default, the cores); --load the number
of busy processes (default: the cores; 0 runs the quiet half only). OMP_WAIT_POLICY (read by
torch's OpenMP when the process starts; PASSIVE: its idle workers sleep instead of spinning) is
printed with the results: run the script with and without it to see what it does to the "torch"
pool and to torch's own op. Needs the installed kvflash package.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import torch

import kvflash
import kvflash.torch_npu as torch_npu

POOLS = ("kvflash", "torch")


def _paged_cache(g, requests, seq_len, kv_heads, dim, block_size):
    """A bf16 paged cache (blocks, block_size, KV_N * D) holding `requests` sequences of seq_len
    tokens, blocks handed out in shuffled order, and its block table."""
    per = -(-seq_len // block_size)
    blocks = requests * per
    key = torch.randn(blocks, block_size, kv_heads * dim, generator=g).to(torch.bfloat16)
    value = torch.randn(blocks, block_size, kv_heads * dim, generator=g).to(torch.bfloat16)
    table = torch.randperm(blocks, generator=g).to(torch.int32).view(requests, per)
    return key, value, table


def ifa_decode(requests, seq_len, heads=32, kv_heads=8, dim=128, block_size=128):
    """npu_incre_flash_attention over a paged bf16 cache (BSH query), Llama-3-8B heads."""
    g = torch.Generator().manual_seed(requests * 7919 + seq_len)
    key, value, table = _paged_cache(g, requests, seq_len, kv_heads, dim, block_size)
    query = torch.randn(requests, 1, heads * dim, generator=g).to(torch.bfloat16)
    kw = dict(num_heads=heads, num_key_value_heads=kv_heads, scale_value=dim ** -0.5,
              input_layout="BSH", block_table=table, block_size=block_size,
              actual_seq_lengths=[seq_len] * requests)
    name = f"ifa decode B={requests} S={seq_len} N={heads} KV_N={kv_heads} D={dim} paged bf16"
    return name, lambda: torch_npu.npu_incre_flash_attention(query, key, value, **kw)


def fia_decode(requests, seq_len, heads=32, kv_heads=8, dim=128, block_size=128):
    """npu_fused_infer_attention_score's decode as vllm-ascend calls it: TND query (one token per
    request), cumulative query lengths, per-request KV lengths, sparse_mode 3 with the 2048 x 2048
    mask."""
    g = torch.Generator().manual_seed(requests * 104729 + seq_len)
    key, value, table = _paged_cache(g, requests, seq_len, kv_heads, dim, block_size)
    query = torch.randn(requests, heads, dim, generator=g).to(torch.bfloat16)
    mask = torch.triu(torch.ones(2048, 2048), diagonal=1).to(torch.int8)
    kw = dict(atten_mask=mask, block_table=table, input_layout="TND", block_size=block_size,
              actual_seq_lengths=list(range(1, requests + 1)),
              actual_seq_lengths_kv=[seq_len] * requests, num_key_value_heads=kv_heads,
              num_heads=heads, scale=dim ** -0.5, sparse_mode=3)
    name = f"fia decode TND B={requests} S={seq_len} N={heads} KV_N={kv_heads} D={dim} paged bf16"
    return name, lambda: torch_npu.npu_fused_infer_attention_score(query, key, value, **kw)[0]


TORCH_OWN = "torch x + 1.0 (1M fp32, torch's own op: no kvflash pool)"


def torch_add():
    x = torch.randn(1 << 20)
    return TORCH_OWN, lambda: x + 1.0


def pools_of(name):
    """The pools a workload is timed on: both for kvflash's operators, none for torch's own."""
    return ("-",) if name == TORCH_OWN else POOLS


def workloads(quick):
    if quick:
        return [ifa_decode(1, 512), fia_decode(2, 512), torch_add()]
    return [ifa_decode(1, 2048), ifa_decode(16, 4096), fia_decode(1, 2048), fia_decode(16, 4096),
            torch_add()]


class BackgroundLoad:
    """`count` busy processes (one per core by default), at nice `nice`, for a `with` block."""

    def __init__(self, count, nice):
        self.count, self.nice, self.procs = count, nice, []

    def __enter__(self):
        spin = f"import os; os.nice({self.nice})\nwhile True: pass"
        self.procs = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(self.count)]
        time.sleep(0.5)  # let them reach the spin loop
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            p.kill()
        for p in self.procs:
            p.wait()
        self.procs = []


def time_calls(fn, calls):
    """Per-call seconds of `calls` calls of fn."""
    out = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def percentile(xs, q):
    s = sorted(xs)
    return s[round(q * (len(s) - 1))]


def measure(work, calls, repeats):
    """{(name, pool): [per-call seconds]}: the pools alternate within each repeat."""
    times = {}
    for _ in range(repeats):
        for name, fn in work:
            for pool in pools_of(name):
                if pool != "-":
                    kvflash.set_thread_pool(pool)
                for _ in range(3):  # warm-up: plans cached, the pool's threads started
                    fn()
                times.setdefault((name, pool), []).extend(time_calls(fn, calls))
    return times


def same_bits(work):
    """Every kvflash workload gives the same bits on both pools."""
    for name, fn in work:
        if name == TORCH_OWN:
            continue
        kvflash.set_thread_pool("kvflash")
        a = fn()
        kvflash.set_thread_pool("torch")
        b = fn()
        if not torch.equal(a.view(torch.int16), b.view(torch.int16)):
            raise SystemExit(f"{name}: the pools gave different bits")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: torch's)")
    ap.add_argument("--calls", type=int, default=200, help="timed calls per repeat")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--load", type=int, default=os.cpu_count(),
                    help="busy background processes (default: one per core; 0: quiet only)")
    ap.add_argument("--load-nice", type=int, default=0,
                    help="their nice value (0: the benchmark's own priority)")
    ap.add_argument("--json", help="also write every number here")
    ap.add_argument("--quick", action="store_true", help="small shapes, for a smoke run")
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    pool_before = kvflash.get_thread_pool()
    work = workloads(a.quick)
    same_bits(work)
    conditions = [("quiet", 0)] + ([("loaded", a.load)] if a.load > 0 else [])
    results = {}
    try:
        for label, count in conditions:
            if count:
                with BackgroundLoad(count, a.load_nice):
                    results[label] = measure(work, a.calls, a.repeats)
            else:
                results[label] = measure(work, a.calls, a.repeats)
    finally:
        kvflash.set_thread_pool(pool_before)

    print(f"kvflash {kvflash.__version__}, torch {torch.__version__}, {platform.machine()} "
          f"{os.cpu_count()} cores, torch.get_num_threads() = {torch.get_num_threads()}, "
          f"{a.repeats} x {a.calls} calls per (op, pool, load); load: {a.load} busy processes "
          f"(nice {a.load_nice}); OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '(unset)')}")
    print("per-call time, ms: median (p90); both pools gave the same bits")
    head = "| op | pool | quiet |" + (" loaded | loaded / quiet |" if a.load > 0 else "")
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    rows = []
    for name, _ in work:
        for pool in pools_of(name):
            row = {"op": name, "pool": pool}
            cells = [name, pool]
            for label, _ in conditions:
                t = results[label][(name, pool)]
                med, p90 = statistics.median(t) * 1e3, percentile(t, 0.9) * 1e3
                row[label] = {"median_ms": med, "p90_ms": p90, "calls": len(t)}
                cells.append(f"{med:.3f} ({p90:.3f})")
            if a.load > 0:
                cells.append(f"{row['loaded']['median_ms'] / row['quiet']['median_ms']:.1f}x")
            rows.append(row)
            print("| " + " | ".join(cells) + " |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"kvflash": kvflash.__version__, "torch": torch.__version__,
                       "cores": os.cpu_count(), "threads": torch.get_num_threads(),
                       "calls": a.calls, "repeats": a.repeats, "load": a.load,
                       "load_nice": a.load_nice,
                       "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", ""), "rows": rows},
                      f, indent=1)


if __name__ == "__main__":
    main()
