"""The context-parallel cases (test_distributed.py) and the worker every spawned rank runs.

Each rank builds the same global problem (support.build_ifa / build_sfa, seeded), takes its
shard of the KV cache, runs kvflash.distributed twice (the repeat must give the same bits) and the
single-process op once, and saves the outputs for the test process to compare.
"""

import torch

import spawn_world
import support
from support import IfaSpec, SfaSpec


def ifa_cases(world):
    """(spec, sharding kind): contiguous shards (even, uneven, one of them empty) and paged."""
    cases = [
        (IfaSpec("bsh_f16", layout="BSH", dtype=torch.float16, batch=3, heads=4, kv_heads=2,
                 lens=(33, 70, 1), slack=2, lse=True), "even"),
        (IfaSpec("bnsd_bf16_mask_pse", layout="BNSD", dtype=torch.bfloat16, batch=2, heads=4,
                 kv_heads=4, dim=128, lens=(40, 77), mask="BN1S", mask_full_row=True, pse="B",
                 lse=True, zero_masked=True), "empty_first"),
        (IfaSpec("bsnd_bf16_int8kv", layout="BSND", dtype=torch.bfloat16, batch=2, heads=8,
                 kv_heads=2, lens=(100, 17), int8_kv="channel", antiquant_shape=2, mask="BS",
                 lse=True), "uneven"),
        (IfaSpec("bsh_f16_leftpad", layout="BSH", dtype=torch.float16, batch=2, heads=2,
                 kv_heads=2, dim=64, lens=(20, 45), kv_padding=4, slack=9, lse=True), "uneven"),
        (IfaSpec("paged_bf16_mask", layout="BSH", dtype=torch.bfloat16, batch=3, heads=4,
                 kv_heads=1, lens=(100, 5, 40), paged=True, block_size=16, mask="B1S",
                 pse="1", lse=True), "paged"),
        (IfaSpec("paged_f16_int8kv", layout="BSND", dtype=torch.float16, batch=2, heads=4,
                 kv_heads=2, lens=(70, 33), paged=True, block_size=32, int8_kv="tensor",
                 lse=True), "paged"),
    ]
    for spec, _ in cases:
        spec.kvn_attr = spec.kv_heads
    return cases


def sfa_cases(world):
    return [
        (SfaSpec("bsnd_bf16", layout_q="BSND", layout_kv="BSND", dtype=torch.bfloat16,
                 q_lens=(2, 3), kv_lens=(40, 70), lse=True), "even"),
        (SfaSpec("bsnd_f16_sbs8_mode0_sink", layout_q="BSND", layout_kv="BSND",
                 dtype=torch.float16, q_lens=(1, 2), kv_lens=(60, 30), sbs=8, sparse_mode=0,
                 sinks=True, lse=True), "empty_first"),
        (SfaSpec("tnd_pa_bf16_sink", layout_q="TND", layout_kv="PA_BSND", dtype=torch.bfloat16,
                 q_lens=(3, 1), kv_lens=(90, 20), sinks=True, lse=True, block_size=16,
                 topk=24), "paged"),
        # 32 indices into 12 / 8 tokens: duplicates outnumber a small shard's tokens
        (SfaSpec("bsnd_bf16_dups", layout_q="BSND", layout_kv="BSND", dtype=torch.bfloat16,
                 q_lens=(1, 1), kv_lens=(12, 8), topk=32, value="own", lse=True), "uneven"),
    ]


def bounds(kind, world, capacity):
    if kind == "even":
        return [capacity * r // world for r in range(world + 1)]
    if kind == "empty_first":  # rank 0 holds nothing
        return [0] + [capacity * r // (world - 1) for r in range(world)]
    # uneven: the last rank takes half, the others share the rest
    half = capacity // 2
    return [half * r // (world - 1) for r in range(world)] + [capacity]


def _shard(t, axis, lo, hi):
    return t.narrow(axis, lo, hi - lo)


def run_ifa_case(spec, kind, world, rank):
    from kvflash import distributed as kd
    import kvflash
    q, k, v, kw = support.build_ifa(spec)
    ext = dict(kw, return_softmax_lse=True, zero_fully_masked_rows=spec.zero_masked)
    single = kvflash.incre_flash_attention(q, k, v, **ext)
    if kind == "paged":
        sharding, lk, lv = kd.RoundRobinBlocks(), k, v  # one pool here; each rank reads its blocks
    else:
        axis = 2 if spec.layout == "BNSD" else 1
        b = bounds(kind, world, k.shape[axis])
        sharding = kd.ContiguousShards(b)
        lk, lv = _shard(k, axis, b[rank], b[rank + 1]), _shard(v, axis, b[rank], b[rank + 1])
    runs = [kd.context_parallel_incre_flash_attention(q, lk, lv, sharding=sharding, **ext)
            for _ in range(2)]
    return {"single": single, "dist": runs[0], "repeat": runs[1]}


def run_sfa_case(spec, kind, world, rank):
    from kvflash import distributed as kd
    import kvflash
    args, kw = support.build_sfa(spec)
    single = kvflash.npu_sparse_flash_attention(*args, **kw)
    q, key, value, idx, scale = args
    kw = dict(kw)
    if kind == "paged":
        sharding = kd.RoundRobinBlocks()
    else:
        b = bounds(kind, world, key.shape[1])
        sharding = kd.ContiguousShards(b)
        same = value is key
        key = _shard(key, 1, b[rank], b[rank + 1])
        kw["key_rope"] = _shard(kw["key_rope"], 1, b[rank], b[rank + 1])
        value = key if same else (None if value is None else _shard(value, 1, b[rank], b[rank + 1]))
    runs = [kd.context_parallel_sparse_flash_attention(q, key, value, idx, scale, sharding=sharding,
                                                       **kw) for _ in range(2)]
    return {"single": single, "dist": runs[0], "repeat": runs[1]}


def worker(rank, world, port, out_dir):
    spawn_world.rank_main(rank, world, port, out_dir, _run_cases)


def _run_cases(world, rank, results):
    for spec, kind in ifa_cases(world):
        results["ifa:" + spec.name] = run_ifa_case(spec, kind, world, rank)
    for spec, kind in sfa_cases(world):
        results["sfa:" + spec.name] = run_sfa_case(spec, kind, world, rank)
