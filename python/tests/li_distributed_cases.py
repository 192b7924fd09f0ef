"""The sharded lightning indexer's cases (test_li_distributed.py) and the worker every spawned
rank runs: each rank builds the same global problem (support.build_li / build_sfa, seeded), takes
its shard of the key cache, runs kvflash.distributed.context_parallel_lightning_indexer twice (the
repeat must give the same bits) and the single-process op once, and saves the outputs for the test
process to compare. A paged rank's pool holds NaN in every block it does not own, so a read of
another rank's block shows. The DSA step cases chain the sharded indexer into
context_parallel_sparse_flash_attention; the failure case makes one rank's local call fail."""
from dataclasses import dataclass

import torch

import spawn_world
import support
from support import SfaSpec

F16, BF16 = torch.float16, torch.bfloat16


@dataclass
class LiCase:
    name: str
    layout_q: str
    sharding: str              # "rr" (PA_BSND key) | "even" | "uneven" | "empty_first" (BSND)
    q_lens: tuple
    kv_lens: tuple
    sparse_count: int
    sparse_mode: int = 3
    dtype: torch.dtype = BF16
    heads: int = 8
    block_size: int = 16
    ties: bool = False         # key rows drawn from 4 rows and the zero row: equal scores
    nan: bool = False          # NaN key elements and one row's NaN weight
    extra_rows: int = 0        # TND query rows past the last prefix sum
    pass_lens: bool = True     # BSND: the lengths given (else S1 and the global S2)
    seed: int = 0


def cases():
    return [
        LiCase("rr_tnd_decode", "TND", "rr", (1, 1, 1), (100, 5, 40), 16),
        LiCase("rr_tnd_mtp_ties_f16", "TND", "rr", (3, 2, 4), (90, 2, 41), 24, dtype=F16,
               ties=True),
        LiCase("rr_bsnd_prefill_nan", "BSND", "rr", (5, 2), (70, 33), 8, nan=True),
        LiCase("rr_tnd_mode0_empty", "TND", "rr", (2, 3), (50, 0), 40, sparse_mode=0,
               block_size=32, extra_rows=2),
        LiCase("rr_bsnd_mode0_ties", "BSND", "rr", (1, 3), (200, 17), 64, sparse_mode=0,
               ties=True, block_size=48),
        LiCase("ct_bsnd_prefill_ties", "BSND", "even", (4, 6), (30, 61), 16, ties=True),
        LiCase("ct_bsnd_mode0_nan_f16", "BSND", "uneven", (1, 3), (45, 70), 8, sparse_mode=0,
               nan=True, dtype=F16),
        LiCase("ct_bsnd_defaults", "BSND", "empty_first", (5, 5), (53, 53), 40, pass_lens=False),
        # prefill: a rank's shard ends inside a batch's causal boundary (both local calls)
        LiCase("ct_bsnd_prefill_long", "BSND", "even", (12, 20), (12, 24), 8),
        LiCase("ct_bsnd_q_over_kv", "BSND", "uneven", (6, 2), (3, 80), 4, ties=True),
    ]


def bounds(kind, world, capacity):
    if kind == "even":
        return [capacity * r // world for r in range(world + 1)]
    if kind == "empty_first":  # rank 0 holds nothing
        return [0] + [capacity * r // (world - 1) for r in range(world)]
    half = capacity // 2  # uneven: the last rank takes half, the others share the rest
    return [half * r // (world - 1) for r in range(world)] + [capacity]


def build(c: LiCase):
    """(query, key, weights, kwargs) of the global npu_lightning_indexer call."""
    layout_k = "PA_BSND" if c.sharding == "rr" else "BSND"
    q, k, w, kw = support.build_li(c.layout_q, layout_k, dtype=c.dtype, heads=c.heads,
                                   sparse_count=c.sparse_count, q_lens=c.q_lens,
                                   kv_lens=c.kv_lens, block_size=c.block_size,
                                   sparse_mode=c.sparse_mode, return_value=True, seed=c.seed)
    g = torch.Generator().manual_seed(1000 + c.seed)
    rows = k.view(-1, 128)
    if c.ties:
        pool = torch.cat([torch.randn(4, 128, generator=g).to(c.dtype), rows.new_zeros(1, 128)])
        rows.copy_(pool[torch.randint(0, 5, (rows.shape[0],), generator=g)])
    if c.nan:
        rows[torch.randint(0, rows.shape[0], (3,), generator=g), 7] = float("nan")
        w.view(-1, c.heads)[1, 0] = float("nan")
    if c.extra_rows:
        q = torch.cat([q, torch.randn(c.extra_rows, *q.shape[1:], generator=g).to(q.dtype)])
        w = torch.cat([w, torch.randn(c.extra_rows, *w.shape[1:], generator=g).to(w.dtype)])
    if not c.pass_lens:
        del kw["actual_seq_lengths_query"], kw["actual_seq_lengths_key"]
    return q, k, w, kw


def own_blocks(k, block_table, world, rank):
    """A copy of the paged pool with NaN in every block rank does not own."""
    mine = block_table[:, rank::world].flatten()
    keep = torch.zeros(k.shape[0], dtype=torch.bool)
    keep[mine[mine >= 0].long()] = True
    local = k.clone()
    local[~keep] = float("nan")
    return local


def shard(c_sharding, k, kw, world, rank):
    from kvflash import distributed as kd
    if c_sharding == "rr":
        return kd.RoundRobinBlocks(), own_blocks(k, kw["block_table"], world, rank)
    b = bounds(c_sharding, world, k.shape[1])
    return kd.ContiguousShards(b), k.narrow(1, b[rank], b[rank + 1] - b[rank])


def run_case(c, world, rank):
    import kvflash
    from kvflash import distributed as kd
    q, k, w, kw = build(c)
    single = kvflash.npu_lightning_indexer(q, k, w, **kw)
    sharding, local = shard(c.sharding, k, kw, world, rank)
    runs = [kd.context_parallel_lightning_indexer(q, local, w, sharding=sharding, **kw)
            for _ in range(2)]
    no_values = kd.context_parallel_lightning_indexer(q, local, w, sharding=sharding,
                                                      **dict(kw, return_value=False))
    return {"single": single, "dist": runs[0], "repeat": runs[1], "no_values": no_values}


def dsa_cases():
    """(name, SFA spec, sharding kind): the DSA step, the indexer's cache sharded like the KV."""
    return [
        ("dsa_tnd_paged", SfaSpec("dsa_tnd_paged", layout_q="TND", layout_kv="PA_BSND",
                                  q_lens=(1, 3), kv_lens=(90, 41), topk=16, block_size=16,
                                  bad_indices=False, lse=True), "rr"),
        ("dsa_bsnd_contiguous", SfaSpec("dsa_bsnd_contiguous", layout_q="BSND",
                                        layout_kv="BSND", q_lens=(2, 4), kv_lens=(37, 64),
                                        topk=8, bad_indices=False, lse=True), "uneven"),
    ]


def run_dsa(spec, kind, world, rank):
    import kvflash
    from kvflash import distributed as kd
    args, kw = support.build_sfa(spec)
    q, key, value, _, scale = args
    g = torch.Generator().manual_seed(7)
    rows_shape = q.shape[:-2]
    li_q = torch.randn(*rows_shape, 8, 128, generator=g).to(q.dtype)
    li_w = torch.randn(*rows_shape, 8, generator=g).to(q.dtype)
    li_k = torch.randn(key.shape[0], key.shape[1], 1, 128, generator=g).to(q.dtype)
    li_kw = dict(actual_seq_lengths_query=kw["actual_seq_lengths_query"],
                 actual_seq_lengths_key=kw["actual_seq_lengths_kv"],
                 layout_query=spec.layout_q, layout_key=spec.layout_kv, sparse_count=spec.topk,
                 sparse_mode=3)
    if "block_table" in kw:
        li_kw["block_table"] = kw["block_table"]
    idx, _ = kvflash.npu_lightning_indexer(li_q, li_k, li_w, **li_kw)
    single = kvflash.npu_sparse_flash_attention(q, key, value, idx, scale, **kw)
    sharding, li_local = shard(kind, li_k, li_kw, world, rank)
    kw = dict(kw)
    if kind == "rr":
        local_key = own_blocks(key, kw["block_table"], world, rank)
        kw["key_rope"] = own_blocks(kw["key_rope"], kw["block_table"], world, rank)
    else:
        b = sharding.bounds
        local_key = key.narrow(1, b[rank], b[rank + 1] - b[rank])
        kw["key_rope"] = kw["key_rope"].narrow(1, b[rank], b[rank + 1] - b[rank])
    local_value = local_key if value is key else value
    d_idx, _ = kd.context_parallel_lightning_indexer(li_q, li_local, li_w, sharding=sharding,
                                                     **li_kw)
    dist_out = kd.context_parallel_sparse_flash_attention(q, local_key, local_value, d_idx, scale,
                                                          sharding=sharding, **kw)
    return {"single_idx": idx, "dist_idx": d_idx, "single": single, "dist": dist_out}


def run_failure(world, rank):
    """Rank world - 1's pool lacks its blocks (a block id out of its range): every rank raises."""
    from kvflash import distributed as kd
    q, k, w, kw = build(LiCase("fail", "TND", "rr", (1, 2), (60, 30), 8))
    local = own_blocks(k, kw["block_table"], world, rank)
    if rank == world - 1:
        local = local[:1]
    try:
        kd.context_parallel_lightning_indexer(q, local, w, sharding=kd.RoundRobinBlocks(), **kw)
    except Exception as e:  # noqa: BLE001 - recorded for the test
        return {"type": type(e).__name__, "message": str(e)}
    return {"type": None, "message": ""}


def worker(rank, world, port, out_dir):
    spawn_world.rank_main(rank, world, port, out_dir, _run_cases)


def _run_cases(world, rank, results):
    for c in cases():
        results[c.name] = run_case(c, world, rank)
    for name, spec, kind in dsa_cases():
        results[name] = run_dsa(spec, kind, world, rank)
    results["failure"] = run_failure(world, rank)
