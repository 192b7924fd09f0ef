#!/usr/bin/env python3
"""Per-call overhead of the PyTorch operator over the C++ API, on a tiny decode problem.

Times N calls of torch.ops.kvflash.npu_incre_flash_attention from Python (output and workspace
allocated by torch, plan looked up in the cache) against N calls of IfaPlan::run in a C++ loop on
the same tensors (plan made once, workspace and output allocated once; the test-only
torch.ops.kvflash_testing.ifa_run_loop). The difference is what the operator adds per call.

    python3 bench/op_overhead.py [--iters 1000] [--threads 1] [--testing-lib PATH]

Needs the installed kvflash package and libkvflash_torch_testing.so (scripts/test.sh builds it in
build/python/python/).
"""
import argparse
import pathlib
import statistics
import time

import torch

import kvflash

REPO = pathlib.Path(__file__).resolve().parents[1]


def measure(iters=1000, repeats=5, batch=1, heads=8, kv_heads=2, dim=64, kv_len=16):
    g = torch.Generator().manual_seed(0)
    q = torch.randn(batch, heads, 1, dim, generator=g).to(torch.float16)
    k = torch.randn(batch, kv_heads, kv_len, dim, generator=g).to(torch.float16)
    v = torch.randn(batch, kv_heads, kv_len, dim, generator=g).to(torch.float16)
    kw = dict(num_heads=heads, num_key_value_heads=kv_heads, scale_value=dim ** -0.5,
              input_layout="BNSD", actual_seq_lengths=[kv_len] * batch)
    op = torch.ops.kvflash.npu_incre_flash_attention
    out = op(q, k, v, **kw)
    for _ in range(100):
        op(q, k, v, **kw)
    op_times, cpp_times = [], []
    for _ in range(repeats):  # interleaved, medians: the machine is shared and noisy
        t0 = time.perf_counter()
        for _ in range(iters):
            op(q, k, v, **kw)
        op_times.append((time.perf_counter() - t0) / iters)
        cpp_times.append(torch.ops.kvflash_testing.ifa_run_loop(q, [k], [v], out, iters, **kw))
    op_s, cpp_s = statistics.median(op_times), statistics.median(cpp_times)
    return {"op_us": op_s * 1e6, "cpp_us": cpp_s * 1e6, "overhead_us": (op_s - cpp_s) * 1e6,
            "shape": f"B={batch} N={heads} KV_N={kv_heads} D={dim} S={kv_len} fp16 BNSD"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iters", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--testing-lib", default=str(REPO / "build/python/python/libkvflash_torch_testing.so"))
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.ops.load_library(a.testing_lib)
    r = measure(a.iters)
    print(f"tiny IFA decode ({r['shape']}), {a.threads} thread(s), median of 5 x {a.iters} calls:")
    print(f"  torch.ops.kvflash.npu_incre_flash_attention from Python: {r['op_us']:8.2f} us/call")
    print(f"  IfaPlan::run in a C++ loop:                              {r['cpp_us']:8.2f} us/call")
    print(f"  overhead of the operator:                                {r['overhead_us']:8.2f} us/call")


if __name__ == "__main__":
    main()
