#!/usr/bin/env python3
"""Side-by-side decode attention: kvflash (`kvflash ifa`) vs PyTorch SDPA on the CPU.

Same shape, same dtype, same thread count, measured in one run so the ratio is meaningful on a
noisy shared machine. SDPA gets the dense equivalent of the problem (contiguous BNSD cache, equal
lengths, GQA through enable_gqa), which is the case it is built for.

    python3 bench/sdpa_peer.py --kvflash build/release/kvflash [--threads 2] [--iters 20]

Needs `pip install torch` (not a dependency of the build or the tests).
"""
import argparse
import re
import statistics
import subprocess
import time

import torch
import torch.nn.functional as F

SHAPES = [  # (batch, kv_len, heads, kv_heads, dim)
    (1, 16384, 32, 8, 128),
    (8, 4096, 32, 8, 128),
    (32, 1024, 32, 8, 128),
    (8, 4096, 32, 32, 128),
]


def sdpa_ms(b, s, n, kvn, d, dtype, iters, threads):
    torch.set_num_threads(threads)
    q = torch.randn(b, n, 1, d, dtype=dtype)
    k = torch.randn(b, kvn, s, d, dtype=dtype)
    v = torch.randn(b, kvn, s, d, dtype=dtype)
    with torch.inference_mode():
        for _ in range(2):
            F.scaled_dot_product_attention(q, k, v, enable_gqa=kvn != n)
        times = []
        for _ in range(iters):
            t0 = time.perf_counter()
            F.scaled_dot_product_attention(q, k, v, enable_gqa=kvn != n)
            times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def kvflash_ms(binary, b, s, n, kvn, d, dtype, iters, threads):
    out = subprocess.run(
        [binary, "ifa", "--batch", str(b), "--kv-len", str(s), "--heads", str(n), "--kv-heads", str(kvn),
         "--dim", str(d), "--kv-dtype", dtype, "--block-size", "0", "--iters", str(iters),
         "--threads", str(threads), "--no-bandwidth"],
        check=True, capture_output=True, text=True).stdout
    return float(re.search(r"([0-9.]+) ms/call", out).group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kvflash", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iters", type=int, default=20)
    args = ap.parse_args()
    print(f"torch {torch.__version__}, {args.threads} threads, median of {args.iters}")
    print("| shape (B, S, N, KV_N, D) | dtype | KV MB | kvflash ms | GB/s | SDPA ms | GB/s | speed-up |")
    print("|---|---|---|---|---|---|---|---|")
    for (b, s, n, kvn, d) in SHAPES:
        for name, dtype in (("bf16", torch.bfloat16), ("fp16", torch.float16)):
            kv_bytes = 2 * b * s * kvn * d * 2
            ours = kvflash_ms(args.kvflash, b, s, n, kvn, d, name, args.iters, args.threads)
            theirs = sdpa_ms(b, s, n, kvn, d, dtype, args.iters, args.threads)
            print(f"| {b}, {s}, {n}, {kvn}, {d} | {name} | {kv_bytes / 1e6:.0f} | {ours:.2f} | "
                  f"{kv_bytes / ours / 1e6:.1f} | {theirs:.2f} | {kv_bytes / theirs / 1e6:.1f} | "
                  f"{theirs / ours:.2f}x |")


if __name__ == "__main__":
    main()
