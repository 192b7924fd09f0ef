#!/usr/bin/env python3
"""The bf16 tensor-core ceiling of the GPU benchmark (issue 10): a plain square GEMM through
PyTorch (cuBLAS), best of several timed runs with CUDA events, as one JSON line. The SFA benchmark
(kvflash_gpu_sfa_bench --peak-tflops) reports its 128-head TFLOP/s as a fraction of this number.
Needs torch with CUDA; no network.

    python3 bench/gpu_gemm_peak.py [--n 8192] [--iters 20]
"""
import argparse
import json

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=8192)
    ap.add_argument("--iters", type=int, default=20)
    a = ap.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("gpu_gemm_peak: torch sees no CUDA device")
    n = a.n
    x = torch.randn(n, n, dtype=torch.bfloat16, device="cuda")
    y = torch.randn(n, n, dtype=torch.bfloat16, device="cuda")
    with torch.inference_mode():
        for _ in range(3):
            torch.matmul(x, y)
        best = float("inf")
        for _ in range(a.iters):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            torch.matmul(x, y)
            e.record()
            e.synchronize()
            best = min(best, s.elapsed_time(e))
    tflops = 2.0 * n ** 3 / (best * 1e-3) / 1e12
    print(json.dumps({"device": torch.cuda.get_device_name(), "n": n, "dtype": "bf16",
                      "best_ms": round(best, 4), "tflops": round(tflops, 1)}))


if __name__ == "__main__":
    main()
