"""The context-parallel FIA decode cases (test_fia_distributed.py) and the worker every spawned
rank runs: each rank builds the same global problem (fia_support.build_fia, seeded), takes its
shard of the KV cache, runs kvflash.distributed twice (the repeat must give the same bits) and the
single-process op once, and saves the outputs for the test process to compare."""

import torch

import spawn_world
from fia_support import FiaSpec, build_fia

BF16 = torch.bfloat16


def cases():
    """(spec, sharding kind)."""
    return [
        (FiaSpec("cp_bsnd_decode", layout="BSND", q_lens=(1, 1, 1), kv_lens=(40, 77, 3),
                 heads=8, kv_heads=2, lse=True), "contiguous"),
        (FiaSpec("cp_bsh_decode_bf16", layout="BSH", q_lens=(1, 1), kv_lens=(64, 9), heads=4,
                 kv_heads=4, dtype=BF16, lse=True), "empty_first"),
        (FiaSpec("cp_tnd_paged_mode3", layout="TND", paged=True, mask="compressed",
                 sparse_mode=3, q_lens=(1, 1, 1), kv_lens=(100, 5, 40), heads=8, kv_heads=2,
                 lse=True, dtype=BF16), "paged"),
        (FiaSpec("cp_mla_rope_bnsd_paged", layout="BNSD", dim=512, rope_dim=64, heads=8,
                 kv_heads=1, value_is_key=True, paged=True, cache_bnsd=True, q_lens=(1, 1),
                 kv_lens=(70, 33), block_size=16, dtype=BF16, lse=True), "paged"),
    ]


def _bounds(kind, world, capacity):
    if kind == "contiguous":
        return [capacity * r // world for r in range(world + 1)]
    return [0] + [capacity * r // (world - 1) for r in range(world)]  # rank 0 holds nothing


def run_case(spec, kind, world, rank):
    import kvflash
    from kvflash import distributed as kd
    case = build_fia(spec)
    q, k, v = case.args
    kw = dict(case.kwargs)
    single = kvflash.npu_fused_infer_attention_score(q, k, v, **kw)
    if kind == "paged":
        sharding = kd.RoundRobinBlocks()  # one pool here; each rank reads its own blocks
    else:
        axis = 2 if spec.layout == "BNSD" else 1
        b = _bounds(kind, world, k.shape[axis])
        sharding = kd.ContiguousShards(b)
        k, v = (t.narrow(axis, b[rank], b[rank + 1] - b[rank]) for t in (k, v))
    runs = [kd.context_parallel_fused_infer_attention_score(q, k, v, sharding=sharding, **kw)
            for _ in range(2)]
    return {"single": single, "dist": runs[0], "repeat": runs[1]}


def worker(rank, world, port, out_dir):
    spawn_world.rank_main(rank, world, port, out_dir, _run_cases)


def _run_cases(world, rank, results):
    for spec, kind in cases():
        results[spec.name] = run_case(spec, kind, world, rank)
