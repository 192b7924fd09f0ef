#!/usr/bin/env python3
"""vllm-ascend's attention path through the torch_npu names, timed the way `kvflash bench` times
the same problems (the `vllm` sweep's atb and kvcache rows, a causal prefill through
npu_fusion_attention, and the LSE update against the same merge in torch): cold caches (twice the last-level
cache read before each timed call), median and p10-p90 of the timed calls, after two untimed ones.

    python3 bench/vllm_path_torch.py [--threads 2] [--iters 10]

Compare its ms with `kvflash bench --sweep vllm` in the same quiet run: the torch path should add
only its per-call overhead (docs/perf-log.md, "vllm-ascend's attention path").
"""
import argparse
import pathlib
import statistics
import time

import torch

import kvflash.torch_npu as torch_npu


def llc_bytes():
    """The largest cache's size from sysfs (32 MiB where sysfs does not say)."""
    sizes = []
    for f in pathlib.Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        text = f.read_text().strip()
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1], 1)
        sizes.append(int(text.rstrip("KMG")) * scale)
    return max(sizes, default=32 << 20)


FLUSH = torch.ones(2 * llc_bytes() // 8, dtype=torch.float64)


def timed(fn, iters):
    for _ in range(2):
        fn()
    ms = []
    for _ in range(iters):
        FLUSH.sum()
        t0 = time.perf_counter()
        fn()
        ms.append((time.perf_counter() - t0) * 1e3)
    ms.sort()
    return statistics.median(ms), ms[len(ms) // 10], ms[(len(ms) * 9) // 10]


def shuffled_blocks(n, g):
    return torch.randperm(n, generator=g)


def paged_attention(batch, kv_len, iters, heads=32, kv_heads=8, dim=128, block=128,
                    dtype=torch.bfloat16):
    """`ifa:b{batch},s{kv_len},kv=bf16,paged=128,layout=atb` as _npu_paged_attention."""
    g = torch.Generator().manual_seed(1)
    per_seq = (kv_len + block - 1) // block
    blocks = batch * per_seq + 2
    kc = torch.randn(blocks, block, kv_heads, dim, generator=g).to(dtype)
    vc = torch.randn(blocks, block, kv_heads, dim, generator=g).to(dtype)
    table = shuffled_blocks(blocks, g)[: batch * per_seq].reshape(batch, per_seq).to(torch.int32)
    q = torch.randn(batch, heads, dim, generator=g).to(dtype)
    lens = torch.full((batch,), kv_len, dtype=torch.int32)
    out = torch.empty_like(q)

    def call():
        torch_npu._npu_paged_attention(query=q, key_cache=kc, value_cache=vc, num_kv_heads=kv_heads,
                                       num_heads=heads, scale_value=dim ** -0.5, block_table=table,
                                       context_lens=lens, out=out)
    return f"ifa:b{batch},s{kv_len},kv=bf16,paged=128,layout=atb", timed(call, iters)


def cache_write(tokens, decode, iters, kv_heads=8, dim=128, block=128, dtype=torch.bfloat16):
    """`kvcache:t{tokens},kvn8,d128,paged=128,kv=bf16,slots=...` as npu_scatter_pa_kv_cache:
    a decode writes one token into each of `tokens` blocks, a prefill requests of 1024 tokens
    in consecutive slots of shuffled blocks."""
    g = torch.Generator().manual_seed(2)
    per_request = 1 if decode else 1024
    lengths = [min(per_request, tokens - t) for t in range(0, tokens, per_request)]
    per_seq = max((n + block - 1) // block for n in lengths)
    blocks = len(lengths) * per_seq + 2
    order = shuffled_blocks(blocks, g)
    slots = []
    for r, n in enumerate(lengths):
        first = int(torch.randint(block, (1,), generator=g)) if decode else 0
        for p in range(first, first + n):
            slots.append(int(order[r * per_seq + p // block]) * block + p % block)
    slots = torch.tensor(slots, dtype=torch.int32)
    key = torch.randn(tokens, kv_heads, dim, generator=g).to(dtype)
    value = torch.randn(tokens, kv_heads, dim, generator=g).to(dtype)
    kc = torch.zeros(blocks, block, kv_heads, dim, dtype=dtype)
    vc = torch.zeros_like(kc)

    def call():
        torch_npu.npu_scatter_pa_kv_cache(key, value, kc, vc, slots, cache_mode="Norm")
    kind = "decode" if decode else "prefill"
    return f"kvcache:t{tokens},kvn8,d128,paged=128,kv=bf16,slots={kind}", timed(call, iters)


def fusion_attention(seq, iters, heads=32, kv_heads=8, dim=128, dtype=torch.bfloat16):
    """`fia:b1,q{seq},s0,n32,kvn8,d128,mode=3` as npu_fusion_attention: one TND request's causal
    prefill with vllm-ascend's 2048 x 2048 compressed mask (sparse mode 3)."""
    g = torch.Generator().manual_seed(3)
    q = torch.randn(seq, heads, dim, generator=g).to(dtype)
    k = torch.randn(seq, kv_heads, dim, generator=g).to(dtype)
    v = torch.randn(seq, kv_heads, dim, generator=g).to(dtype)
    mask = torch.triu(torch.ones(2048, 2048, dtype=torch.bool), diagonal=1)

    def call():
        torch_npu.npu_fusion_attention(q, k, v, heads, "TND", scale=dim ** -0.5, atten_mask=mask,
                                       sparse_mode=3, next_tockens=0, actual_seq_qlen=[seq],
                                       actual_seq_kvlen=[seq])
    return f"fia:b1,q{seq},s0,n32,kvn8,d128,mode=3", timed(call, iters)


def attention_update(parts, rows, iters, dim=128, dtype=torch.bfloat16):
    """npu_attention_update of `parts` partial outputs [rows, dim] (context-parallel decode:
    rows = batch x heads) and their LSE, against the same merge written in torch (fp32)."""
    g = torch.Generator().manual_seed(4)
    lse = [torch.randn(rows, generator=g) * 3 for _ in range(parts)]
    outs = [torch.randn(rows, dim, generator=g).to(dtype) for _ in range(parts)]

    def call():
        torch_npu.npu_attention_update(lse, outs, 0)

    def in_torch():
        stacked = torch.stack(lse)
        w = torch.softmax(stacked, 0)
        (w[..., None] * torch.stack(outs).float()).sum(0).to(dtype)
    name = f"npu_attention_update sp={parts} rows={rows} d={dim}"
    return [(name, timed(call, iters)), (name + " (in torch, fp32)", timed(in_torch, iters))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iters", type=int, default=10)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)  # kvflash's operators run on as many threads
    rows = [paged_attention(b, s, args.iters) for b, s in ((8, 4096), (32, 1024), (1, 16384))]
    rows += [cache_write(t, False, args.iters) for t in (256, 4096, 16384)]
    rows += [cache_write(t, True, args.iters) for t in (32, 256, 1024)]
    rows += [fusion_attention(2048, max(3, args.iters // 3))]
    rows += attention_update(4, 32 * 32, args.iters) + attention_update(8, 256 * 32, args.iters)
    print(f"torch_npu names through kvflash, {args.threads} threads, median of {args.iters}, "
          "cold caches")
    for name, (med, p10, p90) in rows:
        print(f"{name}  median {med:.3f} ms/call (p10-p90 {p10:.3f}-{p90:.3f})")


if __name__ == "__main__":
    main()
