"""The exchange and merge of context-parallel partial results (docs/distributed.md), written once
for every operator's wrapper in distributed.py: one all_gather of each rank's rows, the exact
(output, LSE) merge of attention partials, and the exact top-k merge of the indexer's
selections."""
import torch
import torch.distributed as dist

from ._sharding import _fail, _world


def _gather(parts, group):
    """One all_gather of a [rows, C] buffer (fp32; the indexer's int32); [world, rows, C] in rank
    order."""
    world, _ = _world(group)
    bufs = [torch.empty_like(parts) for _ in range(world)]
    dist.all_gather(bufs, parts.contiguous(), group=group)
    return torch.stack(bufs)


def _merge_lse_partials(out, lse, rows, num_heads, d, group, out_dtype):
    """Every rank's (B, N) x d output rows and their LSE (``-inf`` for an empty partial), gathered
    and merged in rank order with ``merge_attention_states`` (fp32): (merged, merged LSE)."""
    o = out.reshape(rows, num_heads, d).float()
    parts = torch.cat([o, lse.reshape(rows, num_heads, 1)], dim=2).reshape(rows * num_heads, d + 1)
    world, _ = _world(group)
    g = _gather(parts, group).reshape(world, rows, num_heads, d + 1)
    merged, merged_lse, _, _ = torch.ops.kvflash.merge_attention_states(
        g[..., :d], g[..., d], out_dtype=out_dtype)
    return merged, merged_lse


def _order_composites(scores, indices):
    """int64 keys that order (score, index) entries like the indexer's selection (larger first):
    NaN above +inf above every number, +0 == -0, equal scores by the lower index; the 32-bit order
    key of src/cpu/li/li_kernel.hpp (li_order_key), shifted to signed, over the index complement.
    Entries at or past their list's first -1 get int64's minimum (below every real entry)."""
    u = scores.contiguous().view(torch.int32).to(torch.int64) & 0xFFFFFFFF
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    u = torch.where(u == 0x80000000, torch.zeros_like(u), u)
    key = torch.where((u & 0x80000000) != 0, (~u) & 0xFFFFFFFF, u | 0x80000000)
    key = torch.where(nan, torch.full_like(key, 0xFFFFFFFF), key)
    ix = indices.to(torch.int64)
    comp = (key - 2**31) * 2**32 + (0xFFFFFFFF - ix.clamp(min=0))
    live = torch.cumsum((ix < 0).to(torch.int64), dim=-1) == 0
    return torch.where(live, comp, torch.full_like(comp, torch.iinfo(torch.int64).min)), live


def merge_indexer_topk(scores, indices, sparse_count):
    """The exact merge of a sharded lightning indexer's per-rank selections
    (docs/lightning_indexer.md, "Context parallel: the exact top-k merge"; the C++ twin is
    ``li_merge_topk``).

    ``scores`` (fp32) and ``indices`` (int32, global key positions) are ``[world, rows, k_r]``:
    rank r's selection of every query row, in the indexer's order (descending score, NaN first,
    equal scores by the lower index), ``-1`` after its last entry. Returns ``(indices, scores)``,
    ``[rows, sparse_count]`` int32 / fp32: the top ``sparse_count`` of the union in that order,
    ``-1`` / ``-inf`` after the last; the same bits as one indexer over the whole key sequence
    (a key's fp32 score does not depend on the rank that computes it). No ``torch.topk``: one
    stable sort of exact int64 composites. A list out of order, or an entry on two ranks, is a
    ValueError.
    """
    op = "merge_indexer_topk"
    if not isinstance(scores, torch.Tensor) or not isinstance(indices, torch.Tensor):
        _fail(op, "scores and indices must be tensors")
    if scores.dim() != 3 or scores.shape != indices.shape:
        _fail(op, f"scores {tuple(scores.shape)} and indices {tuple(indices.shape)} must both be "
                  f"[world, rows, k]")
    if scores.dtype != torch.float32 or indices.dtype != torch.int32:
        _fail(op, f"scores must be float32 and indices int32, got {scores.dtype} / {indices.dtype}")
    if isinstance(sparse_count, bool) or not isinstance(sparse_count, int) or sparse_count < 1:
        _fail(op, f"sparse_count must be a positive int, got {sparse_count!r}")
    world, rows, kr = scores.shape
    comp, live = _order_composites(scores, indices)
    if kr > 1 and bool(((comp[..., 1:] >= comp[..., :-1]) & live[..., 1:]).any()):
        _fail(op, "a rank's list is not in the selection order (descending score, equal scores "
                  "by the lower index)")
    flat = comp.permute(1, 0, 2).reshape(rows, world * kr)
    flat_scores = scores.permute(1, 0, 2).reshape(rows, world * kr)
    ordered, order = torch.sort(flat, dim=1, descending=True, stable=True)
    low = torch.iinfo(torch.int64).min
    if world * kr > 1 and bool(((ordered[:, 1:] == ordered[:, :-1]) & (ordered[:, 1:] != low))
                               .any()):
        _fail(op, "an entry (score, index) is on more than one rank")
    take = min(sparse_count, world * kr)
    sel = ordered[:, :take]
    ok = sel != low
    out_idx = torch.full((rows, sparse_count), -1, dtype=torch.int32)
    out_scores = torch.full((rows, sparse_count), float("-inf"), dtype=torch.float32)
    out_idx[:, :take] = torch.where(ok, 0xFFFFFFFF - (sel & 0xFFFFFFFF),
                                    torch.full_like(sel, -1)).to(torch.int32)
    out_scores[:, :take] = torch.where(ok, flat_scores.gather(1, order[:, :take]),
                                       torch.full_like(sel, float("-inf"), dtype=torch.float32))
    return out_idx, out_scores


def merge_indexer_topk(scores, indices, sparse_count):
    """The exact merge of a sharded lightning indexer's per-rank selections
    (docs/lightning_indexer.md, "Context parallel: the exact top-k merge"; the C++ twin is
    ``li_merge_topk``).

    ``scores`` (fp32) and ``indices`` (int32, global key positions) are ``[world, rows, k_r]``:
    rank r's selection of every query row, in the indexer's order (descending score, NaN first,
    equal scores by the lower index), ``-1`` after its last entry. Returns ``(indices, scores)``,
    ``[rows, sparse_count]`` int32 / fp32: the top ``sparse_count`` of the union in that order,
    ``-1`` / ``-inf`` after the last; the same bits as one indexer over the whole key sequence
    (a key's fp32 score does not depend on the rank that computes it). No ``torch.topk``: one
    stable sort of exact int64 composites. A list out of order, or an entry on two ranks, is a
    ValueError.
    """
    op = "merge_indexer_topk"
    if not isinstance(scores, torch.Tensor) or not isinstance(indices, torch.Tensor):
        _fail(op, "scores and indices must be tensors")
    if scores.dim() != 3 or scores.shape != indices.shape:
        _fail(op, f"scores {tuple(scores.shape)} and indices {tuple(indices.shape)} must both be "
                  f"[world, rows, k]")
    if scores.dtype != torch.float32 or indices.dtype != torch.int32:
        _fail(op, f"scores must be float32 and indices int32, got {scores.dtype} / {indices.dtype}")
    if isinstance(sparse_count, bool) or not isinstance(sparse_count, int) or sparse_count < 1:
        _fail(op, f"sparse_count must be a positive int, got {sparse_count!r}")
    world, rows, kr = scores.shape
    comp, live = _order_composites(scores, indices)
    if kr > 1 and bool(((comp[..., 1:] >= comp[..., :-1]) & live[..., 1:]).any()):
        _fail(op, "a rank's list is not in the selection order (descending score, equal scores "
                  "by the lower index)")
    flat = comp.permute(1, 0, 2).reshape(rows, world * kr)
    flat_scores = scores.permute(1, 0, 2).reshape(rows, world * kr)
    ordered, order = torch.sort(flat, dim=1, descending=True, stable=True)
    low = torch.iinfo(torch.int64).min
    if world * kr > 1 and bool(((ordered[:, 1:] == ordered[:, :-1]) & (ordered[:, 1:] != low))
                               .any()):
        _fail(op, "an entry (score, index) is on more than one rank")
    take = min(sparse_count, world * kr)
    sel = ordered[:, :take]
    ok = sel != low
    out_idx = torch.full((rows, sparse_count), -1, dtype=torch.int32)
    out_scores = torch.full((rows, sparse_count), float("-inf"), dtype=torch.float32)
    out_idx[:, :take] = torch.where(ok, 0xFFFFFFFF - (sel & 0xFFFFFFFF),
                                    torch.full_like(sel, -1)).to(torch.int32)
    out_scores[:, :take] = torch.where(ok, flat_scores.gather(1, order[:, :take]),
                                       torch.full_like(sel, float("-inf"), dtype=torch.float32))
    return out_idx, out_scores


def _round_like_indexer(scores, dtype):
    """fp32 scores in fp16 / bf16 as the indexer writes sparse_values (src/core/half.hpp): round
    to nearest even (torch's conversion), and a NaN keeps its sign and leading payload bits, made
    quiet (torch writes bf16 NaN as 0xFFFF)."""
    out = scores.to(dtype)
    nan = torch.isnan(scores)
    if bool(nan.any()):
        u = scores[nan].view(torch.int32).to(torch.int64) & 0xFFFFFFFF
        if dtype == torch.bfloat16:
            bits = (u >> 16) | 0x0040
        else:
            bits = ((u >> 16) & 0x8000) | 0x7E00 | ((u >> 13) & 0x3FF)
        out[nan] = torch.where(bits >= 0x8000, bits - 0x10000, bits).to(torch.int16).view(dtype)
    return out
