#!/usr/bin/env python3
"""PyTorch SDPA on CUDA for the decode shapes of issue 9 (the peer column of the GPU benchmark).

One query token per sequence, dense BNSD KV cache, GQA via enable_gqa. Reports the median time
(CUDA events) and the effective KV read bandwidth (K + V bytes / time), as JSON lines; run by
scripts/gpu-check.sh next to the read-bandwidth ceiling (kvflash_gpu_read_bw). Needs torch with
CUDA; no network.

    python3 bench/gpu_sdpa.py [--iters 20] [--quick]
"""
import argparse
import json
import statistics

import torch
import torch.nn.functional as F

# (model, heads, kv_heads, dim): Llama-3-8B, Qwen2.5-7B, a Llama-3-70B tensor-parallel-8 shard.
MODELS = [("llama3-8b", 32, 8, 128), ("qwen2.5-7b", 28, 4, 128), ("llama3-70b-tp8", 8, 1, 128)]
# (batch, kv_len); KV bytes stay under ~20 GB per case.
SHAPES = [(1, 4096), (1, 131072), (8, 4096), (32, 8192), (64, 4096), (256, 1024)]
QUICK = [(1, 4096), (1, 131072), (32, 8192)]


def run(model, n, kvn, d, b, s, dtype, iters):
    q = torch.randn(b, n, 1, d, dtype=dtype, device="cuda")
    k = torch.randn(b, kvn, s, d, dtype=dtype, device="cuda")
    v = torch.randn(b, kvn, s, d, dtype=dtype, device="cuda")
    with torch.inference_mode():
        for _ in range(3):
            F.scaled_dot_product_attention(q, k, v, enable_gqa=kvn != n)
        times = []
        for _ in range(iters):
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            F.scaled_dot_product_attention(q, k, v, enable_gqa=kvn != n)
            e1.record()
            e1.synchronize()
            times.append(e0.elapsed_time(e1))
    ms = statistics.median(times)
    kv_bytes = 2 * k.numel() * k.element_size()
    del q, k, v
    torch.cuda.empty_cache()
    return {"peer": "torch_sdpa", "model": model, "batch": b, "kv_len": s, "heads": n,
            "kv_heads": kvn, "dim": d, "dtype": str(dtype).removeprefix("torch."),
            "median_ms": round(ms, 4), "kv_read_gbps": round(kv_bytes / (ms * 1e-3) / 1e9, 1)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--quick", action="store_true", help="3 shapes, bf16 only")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("gpu_sdpa: torch sees no CUDA device")
    dtypes = [torch.bfloat16] if a.quick else [torch.bfloat16, torch.float16]
    for model, n, kvn, d in MODELS:
        for b, s in QUICK if a.quick else SHAPES:
            for dt in dtypes:
                print(json.dumps(run(model, n, kvn, d, b, s, dt, a.iters)), flush=True)


if __name__ == "__main__":
    main()
