"""torch SDPA (is_causal=True, its CPU flash kernel) at the shapes of bench/cpu_fia_prefill_bench.cpp.

    python bench/sdpa_causal.py <tokens> <threads> [reps]
"""
import sys
import time

import torch

S = int(sys.argv[1]) if len(sys.argv) > 1 else 2048
threads = int(sys.argv[2]) if len(sys.argv) > 2 else 1
reps = int(sys.argv[3]) if len(sys.argv) > 3 else 3
torch.set_num_threads(threads)
N, KVN, D = 32, 8, 128
q = torch.randn(1, N, S, D, dtype=torch.bfloat16)
k = torch.randn(1, KVN, S, D, dtype=torch.bfloat16)
v = torch.randn(1, KVN, S, D, dtype=torch.bfloat16)
best = 1e30
for r in range(reps + 1):
    t0 = time.perf_counter()
    torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    t = time.perf_counter() - t0
    if r > 0:
        best = min(best, t)
flops = 4.0 * N * D * S * (S + 1) / 2.0
print(f"sdpa causal S={S} threads={threads}: {best * 1e3:.1f} ms, {flops / best * 1e-9:.1f} GFLOP/s")
