"""Context-parallel decode on torch.distributed (docs/distributed.md).

Each rank holds a shard of every sequence's KV cache, attends its shard with the local kvflash op
(with the softmax statistics), one ``all_gather`` exchanges the partial (output, statistics) rows
(B x N x (D + 1) fp32 values per rank for IFA, D + 2 for SFA), and every rank merges the same
gathered buffer with ``torch.ops.kvflash.merge_attention_states`` (fp32, fixed rank order), so
every rank returns the same bits, and the same bits on every repeat for a fixed world size.
The sharded lightning indexer (``context_parallel_lightning_indexer``) exchanges each rank's
top-k (score, global index) lists instead, and every rank merges them with ``merge_indexer_topk``.

Sharding descriptions:

- ``ContiguousShards(bounds)``: rank r holds global token positions ``[bounds[r], bounds[r+1])``
  of every sequence (a non-paged cache; the rank's key / value hold exactly those positions).
- ``RoundRobinBlocks()``: a paged cache; logical block j of each sequence lives on rank
  ``j % world_size``. The caller passes the global ``block_table``; the entries of the blocks a
  rank owns are indices into that rank's own cache (the others are not read).

Everything else is given as for the single-process op, in global terms (lengths, masks and pse
over global positions, global sparse indices); each rank slices masks / pse and translates
lengths, left padding, block tables and sparse indices to its shard. Host length lists (IFA's
``actual_seq_lengths``, ``ContiguousShards.bounds``) may also be 1-D integer CPU tensors. The
arguments the sharding arithmetic reads are checked before anything else (and before any
collective), with a ValueError naming the argument.

The sharding arithmetic is written once in ``_sharding.py`` and the exchange and merges in
``_cp_merge.py``; each operator's wrapper below checks what it reads, translates its arguments to
its shard and calls the single-process op.
"""
import torch

from . import incre_flash_attention as _ifa
from . import npu_fused_infer_attention_score as _fia
from ._cp_merge import _gather, _merge_lse_partials, _round_like_indexer, merge_indexer_topk
from ._sharding import (ContiguousShards, RoundRobinBlocks, _check_round_robin_cache,
                        _check_sharding, _check_tensor, _contiguous_shard, _fail, _host_ints,
                        _round_robin_shard, _slice_last, _tensor_ints)

__all__ = ["ContiguousShards", "RoundRobinBlocks", "context_parallel_incre_flash_attention",
           "context_parallel_sparse_flash_attention", "merge_indexer_topk",
           "context_parallel_lightning_indexer", "context_parallel_fused_infer_attention_score"]


def context_parallel_incre_flash_attention(query, key, value, *, group=None, sharding,
                                           padding_mask=None, atten_mask=None, pse_shift=None,
                                           actual_seq_lengths=None, antiquant_scale=None,
                                           antiquant_offset=None, block_table=None,
                                           dequant_scale1=None, quant_scale1=None,
                                           dequant_scale2=None, quant_scale2=None,
                                           quant_offset2=None, kv_padding_size=None, num_heads=1,
                                           scale_value=1.0, input_layout="BSH",
                                           num_key_value_heads=0, block_size=0, inner_precise=1,
                                           return_softmax_lse=False,
                                           zero_fully_masked_rows=False):
    """``kvflash.incre_flash_attention`` over a KV cache sharded across ``group``.

    ``key`` / ``value`` are this rank's shard (a tensor); the other arguments are the single-process
    op's, in global positions. Returns ``(attention_out, softmax_lse)`` like the single-process op,
    the same bits on every rank. Not supported: int8 output (quant_scale2; quantise the merged
    output instead), key/value lists.
    """
    op = "context_parallel_incre_flash_attention"
    # Everything the sharding arithmetic below reads is checked first (the local op checks the
    # rest), before any collective.
    _check_sharding(op, sharding)
    if quant_scale2 is not None:
        _fail(op, "quant_scale2 (int8 output) is not supported; quantise the merged output")
    if input_layout not in ("BSH", "BSND", "BNSD"):
        _fail(op, f"input_layout must be BSH, BSND or BNSD, got {input_layout!r}")
    rank_of = 3 if input_layout == "BSH" else 4
    _check_tensor(op, "query", query, (rank_of,))
    if isinstance(key, (list, tuple)) or isinstance(value, (list, tuple)):
        _fail(op, "key and value must be tensors (this rank's shard), not lists")
    _check_tensor(op, "key", key, (3, 4) if isinstance(sharding, RoundRobinBlocks) else (rank_of,))
    _check_tensor(op, "value", value, (key.dim(),))
    if isinstance(num_heads, bool) or not isinstance(num_heads, int) or num_heads < 1:
        _fail(op, f"num_heads ({num_heads}) must be a positive int")
    actual_seq_lengths = _host_ints(op, "actual_seq_lengths", actual_seq_lengths)
    if isinstance(sharding, RoundRobinBlocks):
        if block_table is None:
            _fail(op, "RoundRobinBlocks (a paged cache) needs block_table")
        if actual_seq_lengths is None:
            _fail(op, "RoundRobinBlocks (a paged cache) needs actual_seq_lengths")
        _check_tensor(op, "block_table", block_table, (2,))
        # The single-process op's range (src/ops/ifa/ifa_validate_kv.cpp); _rr_lengths divides by it.
        if isinstance(block_size, bool) or not isinstance(block_size, int) or \
                not 1 <= block_size <= 512:
            _fail(op, f"block_size ({block_size}) must be in [1, 512] with block_table "
                      f"(RoundRobinBlocks)")
    elif block_table is not None:
        _fail(op, "ContiguousShards describes a non-paged cache; use RoundRobinBlocks with "
                  "block_table")
    layout = input_layout
    b = query.shape[0]
    kv_pad = None
    if isinstance(sharding, ContiguousShards):
        shard, s_glob = _contiguous_shard(sharding, group, key.shape[2 if layout == "BNSD" else 1])
        lens = list(actual_seq_lengths) if actual_seq_lengths is not None else [s_glob] * b
        pad = None
        if kv_padding_size is not None and kv_padding_size.numel() > 0 and \
                actual_seq_lengths is not None:
            pad = max(int(kv_padding_size.reshape(-1)[0]), 0)
        if pad is None:
            local = shard.lengths(lens)
        else:
            # Left padding: batch b's tokens are [S - pad - len_b, S - pad) of the global cache.
            off, n = shard.off, shard.n
            end = min(max(s_glob - pad - off, 0), n)
            local = [end - min(max(s_glob - pad - x - off, 0), n) for x in lens]
            kv_pad = torch.tensor([n - end], dtype=torch.int64)
    else:
        shard = _round_robin_shard(group, block_table, block_size, b)
        local = shard.lengths(actual_seq_lengths)
    positions, local_bt = shard.positions(), shard.block_table

    d = query.shape[-1] if layout != "BSH" else query.shape[-1] // num_heads
    if key.numel() == 0:  # an empty shard: an empty partial (lse -inf), no local call
        out = query.new_zeros(query.shape)
        lse = torch.full((b, num_heads), float("-inf"))
    else:
        out, lse = _ifa(query, key, value, padding_mask=padding_mask,
                        atten_mask=_slice_last(atten_mask, positions),
                        pse_shift=_slice_last(pse_shift, positions), actual_seq_lengths=local,
                        antiquant_scale=antiquant_scale, antiquant_offset=antiquant_offset,
                        block_table=local_bt, dequant_scale1=dequant_scale1,
                        quant_scale1=quant_scale1, dequant_scale2=dequant_scale2,
                        kv_padding_size=kv_pad, num_heads=num_heads, scale_value=scale_value,
                        input_layout=layout, num_key_value_heads=num_key_value_heads,
                        block_size=block_size, inner_precise=inner_precise, return_softmax_lse=True,
                        zero_fully_masked_rows=zero_fully_masked_rows)
    # Rows (B, N) x D (every layout's query has its S = 1 axis outside (N, D)).
    merged, merged_lse = _merge_lse_partials(out, lse, b, num_heads, d, group, query.dtype)
    merged = merged.reshape(query.shape)
    if return_softmax_lse:
        return merged, merged_lse
    return merged, torch.empty(0, dtype=torch.float32)


def _sfa_rows(query, layout_query, actual_seq_lengths_query, lkv):
    """Per query row: its batch and its causal threshold for sparse_mode 3 (docs/semantics.md §3.4)."""
    if layout_query == "TND":
        cum = [int(x) for x in actual_seq_lengths_query]
        batch, thr_i = [], []
        prev = 0
        for bi, c in enumerate(cum):
            lq = c - prev
            for i in range(lq):
                batch.append(bi)
                thr_i.append(min(lkv[bi] - lq + i + 1, lkv[bi]))
            prev = c
        return batch, thr_i
    bsz, s1 = query.shape[0], query.shape[1]
    lqs = [int(x) for x in actual_seq_lengths_query] if actual_seq_lengths_query is not None \
        else [s1] * bsz
    batch, thr_i = [], []
    for bi in range(bsz):
        for i in range(s1):
            batch.append(bi)
            # rows past the batch's query length are padding: invalid (threshold 0)
            thr_i.append(min(lkv[bi] - lqs[bi] + i + 1, lkv[bi]) if i < lqs[bi] else 0)
    return batch, thr_i


def context_parallel_sparse_flash_attention(query, key, value, sparse_indices, scale_value, *,
                                            group=None, sharding, block_table=None,
                                            actual_seq_lengths_query=None,
                                            actual_seq_lengths_kv=None, query_rope=None,
                                            key_rope=None, sparse_block_size=1,
                                            layout_query="BSND", layout_kv="BSND", sparse_mode=3,
                                            pre_tokens=2**63 - 1, next_tokens=2**63 - 1,
                                            attention_mode=2, return_softmax_lse=False,
                                            sinks=None):
    """``kvflash.npu_sparse_flash_attention`` over a KV cache sharded across ``group``.

    ``key`` / ``value`` / ``key_rope`` are this rank's shard; ``sparse_indices`` are global (as
    for the single-process op): each rank applies the selection rule (threshold, first -1 ends
    the list, blocks of ``sparse_block_size`` clipped at the threshold) and keeps the selected
    positions in its shard, as local token indices. The sink is added once, in the merge.
    Returns ``(attention_out, softmax_max, softmax_sum)`` like the single-process op. KV layout
    BSND (ContiguousShards) or PA_BSND (RoundRobinBlocks).
    """
    op = "context_parallel_sparse_flash_attention"
    # Everything the sharding and selection arithmetic below reads is checked first (the local op
    # checks the rest), before any collective.
    _check_sharding(op, sharding)
    if layout_query not in ("BSND", "TND"):
        _fail(op, f"layout_query must be BSND or TND, got {layout_query!r}")
    _check_tensor(op, "query", query, (3,) if layout_query == "TND" else (4,))
    _check_tensor(op, "key", key, (4,))
    _check_tensor(op, "sparse_indices", sparse_indices, (query.dim(),))
    q_lens = _tensor_ints(op, "actual_seq_lengths_query", actual_seq_lengths_query)
    if layout_query == "TND" and q_lens is None:
        _fail(op, "actual_seq_lengths_query is required with layout_query TND")
    kv_lens = _tensor_ints(op, "actual_seq_lengths_kv", actual_seq_lengths_kv)
    sbs = sparse_block_size
    if isinstance(sbs, bool) or not isinstance(sbs, int) or sbs < 1 or sbs > 128 or sbs & (sbs - 1):
        _fail(op, f"sparse_block_size ({sbs}) must be a power of two in [1, 128]")
    if isinstance(sharding, ContiguousShards):
        if layout_kv != "BSND":
            _fail(op, f"ContiguousShards needs layout_kv BSND, got {layout_kv!r}")
    else:
        bs = _check_round_robin_cache(op, ("layout_kv", layout_kv), block_table,
                                      ("actual_seq_lengths_kv", kv_lens), key)
    bsz = query.shape[0] if layout_query != "TND" else len(q_lens)
    if isinstance(sharding, ContiguousShards):
        shard, s_glob = _contiguous_shard(sharding, group, key.shape[1])
        lkv = kv_lens if kv_lens is not None else [s_glob] * bsz
    else:
        shard = _round_robin_shard(group, block_table, bs, bsz)
        lkv = kv_lens
    local_lens, local_bt = shard.lengths(lkv), shard.block_table

    # Global selection (docs/semantics.md §3.4), expanded to tokens, restricted to this shard.
    idx_shape = sparse_indices.shape
    k = idx_shape[-1]
    rows = sparse_indices.reshape(-1, k).long()  # (B*S1 | T) x KV_N(=1) rows
    batch, thr = _sfa_rows(query, layout_query, q_lens, lkv)
    thr_t = torch.tensor(thr, dtype=torch.int64)
    pad_row = torch.zeros(len(batch), dtype=torch.bool)
    if sparse_mode != 3:
        pad_row = thr_t <= 0
        thr_t = torch.tensor([0 if p else lkv[bi] for bi, p in zip(batch, pad_row.tolist())],
                             dtype=torch.int64)
    valid_count = torch.clamp(torch.div(thr_t + sbs - 1, sbs, rounding_mode="floor"), max=k)
    r_ix = torch.arange(k)
    ended = torch.cumsum((rows == -1).long(), dim=1) > 0
    ok = (r_ix[None, :] < valid_count[:, None]) & ~ended & (rows >= 0)
    tok = rows[:, :, None] * sbs + torch.arange(sbs)[None, None, :]
    ok = ok[:, :, None] & (tok < thr_t[:, None, None])
    tok = tok.reshape(rows.shape[0], -1)
    ok = ok.reshape(rows.shape[0], -1)
    local_pos, mine = shard.to_local(tok)
    keep = ok & mine
    order = torch.argsort((~keep).to(torch.int8), dim=1, stable=True)
    local_idx = torch.where(keep, local_pos, torch.full_like(local_pos, -1)).gather(1, order)
    width = max(int(keep.sum(dim=1).max()) if keep.numel() else 0, 1)
    local_idx = local_idx[:, :width].to(torch.int32).reshape(*idx_shape[:-1], width).contiguous()
    # The local op examines min(K, local length) entries of a row; a selection with duplicates
    # can hold more entries than the shard has tokens, so the local length is raised to the
    # entry count (positions past the real length are never indexed).
    counts = keep.sum(dim=1).tolist()
    need = list(local_lens)
    for row, bi in enumerate(batch):
        need[bi] = max(need[bi], counts[row])
    if need != local_lens:
        local_lens = need
        if local_bt is not None:  # more (unread) columns for the longer lengths
            cols = max(-(-x // bs) for x in need)
            if cols > local_bt.shape[1]:
                extra = local_bt[:, :1].expand(bsz, cols - local_bt.shape[1])
                local_bt = torch.cat([local_bt, extra], dim=1).contiguous()
        elif max(need) > key.shape[1]:  # a padded copy of the (small) shard
            grow = max(need) - key.shape[1]

            def pad(t):
                return None if t is None else torch.cat(
                    [t, t.new_zeros((t.shape[0], grow) + tuple(t.shape[2:]))], dim=1)
            same = value is key
            value = None if value is None else (None if same else pad(value))
            key, key_rope = pad(key), pad(key_rope)
            if same:
                value = key

    if key.numel() == 0:  # an empty shard: empty partials (sum 0), no local call
        kvn = key.shape[-2]
        q = query.shape
        sshape = (kvn, q[0], q[1] // kvn) if layout_query == "TND" else \
            (q[0], kvn, q[1], q[2] // kvn)
        out = query.new_zeros(q)
        mx, sm = torch.zeros(sshape), torch.zeros(sshape)
    else:
        # Local: token indices (block size 1), sparse_mode 0 over the shard's tokens; the
        # threshold and block clipping were applied above, in global positions.
        out, mx, sm = torch.ops.kvflash.npu_sparse_flash_attention(
            query, key, value, local_idx, scale_value, block_table=local_bt,
            actual_seq_lengths_query=actual_seq_lengths_query
            if actual_seq_lengths_query is None or isinstance(actual_seq_lengths_query, torch.Tensor)
            else torch.tensor(q_lens, dtype=torch.int32),
            actual_seq_lengths_kv=torch.tensor(local_lens, dtype=torch.int32),
            query_rope=query_rope, key_rope=key_rope, sparse_block_size=1,
            layout_query=layout_query, layout_kv=layout_kv, sparse_mode=0,
            pre_tokens=pre_tokens, next_tokens=next_tokens, attention_mode=attention_mode,
            return_softmax_lse=True, sinks=None)
    # Rows (row, head) in out's order; softmax tensors are [B, KV_N, S1, G] | [KV_N, T, G].
    n1, d = out.shape[-2], out.shape[-1]
    if layout_query == "TND":
        to_rows = (lambda t: t.permute(1, 0, 2).reshape(-1, n1))
        shape_back = mx.shape
        back = (lambda t: t.reshape(shape_back[1], shape_back[0], shape_back[2]).permute(1, 0, 2))
    else:
        to_rows = (lambda t: t.permute(0, 2, 1, 3).reshape(t.shape[0], t.shape[2], n1))
        shape_back = mx.shape
        back = (lambda t: t.reshape(shape_back[0], shape_back[2], shape_back[1],
                                    shape_back[3]).permute(0, 2, 1, 3))
    nrows = out.numel() // d
    parts = torch.cat([out.float().reshape(nrows, d), to_rows(mx).reshape(nrows, 1),
                       to_rows(sm).reshape(nrows, 1)], dim=1)
    g = _gather(parts, group)
    sink = None
    if sinks is not None:
        sink = sinks.float().reshape(1, n1).expand(nrows // n1, n1).reshape(nrows)
    merged, _, mmax, msum = torch.ops.kvflash.merge_attention_states(
        g[..., :d], partial_max=g[..., d], partial_sum=g[..., d + 1], sink=sink,
        out_dtype=query.dtype)
    merged = merged.reshape(out.shape)
    if not return_softmax_lse:
        return merged, mx.new_empty(0), sm.new_empty(0)
    # Invalid rows (threshold <= 0) report max = sum = 0 even with a sink (docs/semantics.md §3.4).
    invalid = (((thr_t <= 0) & (sparse_mode == 3)) | pad_row).repeat_interleave(n1)
    mmax = torch.where(invalid, torch.zeros_like(mmax), mmax)
    msum = torch.where(invalid, torch.zeros_like(msum), msum)
    return merged, back(mmax).contiguous(), back(msum).contiguous()


def _li_row_thresholds(query, layout_query, q_lens, lkv, sparse_mode):
    """Per query row (BSND b * S1 + i, TND t): its batch and how many of the batch's leading
    global key positions it sees (0 for a padding row: BSND i >= its query length, TND past the
    last prefix sum)."""
    batch, thr = _sfa_rows(query, layout_query, q_lens, lkv)
    rows = query.shape[0] if layout_query == "TND" else query.shape[0] * query.shape[1]
    if layout_query == "TND":
        valid = [True] * len(batch)
    else:
        s1 = query.shape[1]
        lqs = q_lens if q_lens is not None else [s1] * query.shape[0]
        valid = [i % s1 < lqs[i // s1] for i in range(rows)]
    if sparse_mode == 0:
        thr = [lkv[b] if v else 0 for b, v in zip(batch, valid)]
    pad = rows - len(batch)  # TND rows past the last prefix sum
    return batch + [0] * pad, [max(x, 0) for x in thr] + [0] * pad


def _li_scores(query, key, weights, q_lens, k_lens, block_table, layout_query, layout_key,
               sparse_count, sparse_mode, pre_tokens, next_tokens):
    """One local lightning_indexer_scores call; (sparse_indices, scores)."""
    return torch.ops.kvflash.lightning_indexer_scores(
        query, key, weights, actual_seq_lengths_query=torch.tensor(q_lens, dtype=torch.int32),
        actual_seq_lengths_key=torch.tensor(k_lens, dtype=torch.int32), block_table=block_table,
        layout_query=layout_query, layout_key=layout_key, sparse_count=sparse_count,
        sparse_mode=sparse_mode, pre_tokens=pre_tokens, next_tokens=next_tokens)


def context_parallel_lightning_indexer(query, key, weights, *, group=None, sharding,
                                       actual_seq_lengths_query=None, actual_seq_lengths_key=None,
                                       block_table=None, layout_query="BSND", layout_key="BSND",
                                       sparse_count=2048, sparse_mode=3, pre_tokens=2**63 - 1,
                                       next_tokens=2**63 - 1, return_value=False):
    """``kvflash.npu_lightning_indexer`` over an indexer key cache sharded across ``group``
    (docs/distributed.md, docs/lightning_indexer.md "Context parallel").

    ``key`` is this rank's shard; the rest is the single-process op's, in global terms (lengths
    over global positions, the global ``block_table``). Each rank selects the top
    ``sparse_count`` of its own keys with ``torch.ops.kvflash.lightning_indexer_scores`` (every
    query row restricted to the global positions it sees), maps its indices to global positions,
    one ``all_gather`` exchanges the (score, index) lists and every rank merges them with
    ``merge_indexer_topk``. Returns ``(sparse_indices, sparse_values)`` as the single-process op,
    the same bits (``sparse_values``: the merged fp32 scores rounded to the query dtype; ``[0]``
    unless ``return_value``), on every rank.

    ``RoundRobinBlocks``: layout_key PA_BSND, BSND or TND query. ``ContiguousShards``: layout_key
    and layout_query BSND. A local call that fails on any rank makes every rank raise (after the
    collective, so no rank waits for one that gave up).
    """
    op = "context_parallel_lightning_indexer"
    # Everything the row and sharding arithmetic below reads is checked first (the local op
    # checks the rest, and its failure is reported on every rank), before any collective.
    _check_sharding(op, sharding)
    for name, value, kind in (("layout_query", layout_query, str), ("layout_key", layout_key, str),
                              ("sparse_mode", sparse_mode, int), ("pre_tokens", pre_tokens, int),
                              ("next_tokens", next_tokens, int),
                              ("return_value", return_value, bool)):
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            _fail(op, f"{name} must be a {kind.__name__}, got a {type(value).__name__}")
    if layout_query not in ("BSND", "TND"):
        _fail(op, f"layout_query must be BSND or TND, got {layout_query!r}")
    _check_tensor(op, "query", query, (3, 4))
    q_rank = 3 if layout_query == "TND" else 4
    if query.dim() != q_rank:
        _fail(op, f"query must be {q_rank}-D for layout_query {layout_query}, got shape "
                  f"{tuple(query.shape)}")
    _check_tensor(op, "key", key, (4,))
    if key.dtype != query.dtype:
        _fail(op, f"key dtype ({key.dtype}) must be the query's ({query.dtype})")
    _check_tensor(op, "weights", weights, (query.dim() - 1,))
    if tuple(weights.shape) != tuple(query.shape[:-1]):
        _fail(op, f"weights {tuple(weights.shape)} must be the query's {tuple(query.shape[:-1])} "
                  f"(its rows and heads)")
    if any(x == 0 for x in query.shape):
        _fail(op, f"query must not be empty, got shape {tuple(query.shape)}")
    if sparse_mode not in (0, 3):
        _fail(op, f"sparse_mode must be 0 or 3, got {sparse_mode!r}")
    k = sparse_count
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 8192:
        _fail(op, f"sparse_count must be an int in [1, 8192], got {k!r}")
    q_lens = _tensor_ints(op, "actual_seq_lengths_query", actual_seq_lengths_query)
    kv_lens = _tensor_ints(op, "actual_seq_lengths_key", actual_seq_lengths_key)
    if layout_query == "TND":
        t = query.shape[0]
        if q_lens is None or not q_lens or any(x > y for x, y in zip([0] + q_lens, q_lens)) or \
                q_lens[-1] > t:
            _fail(op, f"actual_seq_lengths_query must be non-empty, non-decreasing prefix sums "
                      f"from >= 0 up to T ({t}) with layout_query TND, got {q_lens}")
        bsz, b_from = len(q_lens), "the entries of actual_seq_lengths_query"
    else:
        bsz, s1 = query.shape[0], query.shape[1]
        b_from = "query dim 0"
        if q_lens is not None and (len(q_lens) != bsz or any(not 0 <= x <= s1 for x in q_lens)):
            _fail(op, f"actual_seq_lengths_query must hold B ({bsz}) lengths in [0, S1 = {s1}], "
                      f"got {q_lens}")
    if isinstance(sharding, ContiguousShards):
        if layout_key != "BSND" or layout_query != "BSND":
            _fail(op, f"ContiguousShards needs layout_key and layout_query BSND, got "
                      f"{layout_key!r} / {layout_query!r}")
        if block_table is not None:
            _fail(op, "ContiguousShards describes a non-paged cache; use RoundRobinBlocks with "
                      "block_table")
        n = key.shape[1]
        cap = sharding.bounds[-1] if sharding.bounds else 0  # global S2 (checked below)
    else:
        bs = _check_round_robin_cache(op, ("layout_key", layout_key), block_table,
                                      ("actual_seq_lengths_key", kv_lens), key)
        if block_table.shape[0] != bsz:
            _fail(op, f"block_table must have B ({bsz}, {b_from}) rows, got shape "
                      f"{tuple(block_table.shape)}")
        cap = block_table.shape[1] * bs
    if kv_lens is not None and (len(kv_lens) != bsz or any(not 0 <= x <= cap for x in kv_lens)):
        _fail(op, f"actual_seq_lengths_key must hold B ({bsz}, {b_from}) lengths in [0, {cap}], "
                  f"got {kv_lens}")
    if isinstance(sharding, ContiguousShards):
        off = _contiguous_shard(sharding, group, n)[0].off
    else:
        shard = _round_robin_shard(group, block_table, bs, bsz)
    lkv = kv_lens if kv_lens is not None else [cap] * bsz
    rows = query.shape[0] if layout_query == "TND" else bsz * query.shape[1]
    out_shape = (query.shape[0], 1, k) if layout_query == "TND" else (bsz, query.shape[1], 1, k)

    def local():
        """This rank's (global indices, scores) [rows, K]."""
        if key.numel() == 0:  # an empty shard: empty lists, no local call
            return (torch.full((rows, k), -1, dtype=torch.int32),
                    torch.full((rows, k), float("-inf")))
        if isinstance(sharding, ContiguousShards):
            return _li_contiguous(query, key, weights, q_lens, lkv, off, k, sparse_mode,
                                  pre_tokens, next_tokens)
        # Every query row is a batch of its own (a TND row), with its batch's table row and as
        # many keys as its global threshold leaves in this rank's blocks: local positions are
        # monotonic in global ones, so those are the rank's first keys of the sequence.
        local_bt = shard.block_table
        batch, thr = _li_row_thresholds(query, layout_query, q_lens, lkv, sparse_mode)
        idx, sc = _li_scores(
            query.reshape(rows, *query.shape[-2:]), key, weights.reshape(rows, -1),
            list(range(1, rows + 1)), shard.lengths(thr),
            local_bt.index_select(0, torch.tensor(batch, dtype=torch.long)).contiguous(), "TND",
            "PA_BSND", k, 0, pre_tokens, next_tokens)
        idx = idx.reshape(rows, k).long()
        glob = shard.positions()[idx.clamp(min=0)]
        return torch.where(idx >= 0, glob, -1).to(torch.int32), sc.reshape(rows, k)

    # One int32 buffer [rows + 1, 2K]: the score bits, the indices, and in the last row the
    # rank's status (0 ok, 1 ValueError, 2 another error).
    parts = torch.zeros((rows + 1, 2 * k), dtype=torch.int32)
    failure = None
    try:
        idx, sc = local()
        parts[:rows, :k] = sc.contiguous().view(torch.int32)
        parts[:rows, k:] = idx
    except (ValueError, RuntimeError, TypeError, IndexError) as e:
        failure = e
        parts[rows, 0] = 1 if isinstance(e, ValueError) else 2
    g = _gather(parts, group)
    status = g[:, rows, 0].tolist()
    if failure is not None:
        raise failure
    bad = [r for r, x in enumerate(status) if x]
    if bad:
        kind = ValueError if status[bad[0]] == 1 else RuntimeError
        raise kind(f"[{op}] the local indexer failed on rank {bad[0]} (its error names the "
                   f"argument)")
    scores = g[:, :rows, :k].contiguous().view(torch.float32)
    indices, merged = merge_indexer_topk(scores, g[:, :rows, k:].contiguous(), k)
    indices = indices.reshape(out_shape)
    if not return_value:
        return indices, torch.empty(0, dtype=query.dtype)
    return indices, _round_like_indexer(merged, query.dtype).reshape(out_shape)


def _li_contiguous(query, key, weights, q_lens, lkv, off, k, sparse_mode, pre_tokens,
                   next_tokens):
    """A ContiguousShards rank's (global indices, scores) [B * S1, K]: BSND query and key.

    Its keys are global positions [off, off + n). A row (b, i) of sparse_mode 3 sees global
    positions below thr = S2_b - S1_b + i + 1, here local ones below thr - off: for the rows
    where that is below the rank's n_b keys of batch b (the first S1'_b = n_b - S2_b + off + S1_b
    rows, clipped to [0, S1_b]) a local sparse_mode 3 call with S1'_b query rows and n_b keys
    gives exactly that threshold (n_b - S1'_b + i + 1 = thr - off); the other rows see all n_b
    (a local sparse_mode 0 call)."""
    bsz, s1, n = query.shape[0], query.shape[1], key.shape[1]
    lqs = q_lens if q_lens is not None else [s1] * bsz
    nb = [min(max(x - off, 0), n) for x in lkv]
    if sparse_mode == 3:
        part = [min(max(m - x + off + q, 0), q) for m, x, q in zip(nb, lkv, lqs)]
    else:
        part = [0] * bsz
    calls = {}
    if any(p < q for p, q in zip(part, lqs)) or all(q == 0 for q in lqs):
        calls[0] = _li_scores(query, key, weights, lqs, nb, None, "BSND", "BSND", k, 0,
                              pre_tokens, next_tokens)
    if any(p > 0 for p in part):
        calls[3] = _li_scores(query, key, weights, part, nb, None, "BSND", "BSND", k, 3,
                              pre_tokens, next_tokens)
    if len(calls) == 2:  # rows i < S1'_b from the mode 3 call
        i = torch.arange(s1)[None, :, None, None]
        take3 = i < torch.tensor(part)[:, None, None, None]
        idx = torch.where(take3, calls[3][0], calls[0][0])
        sc = torch.where(take3, calls[3][1], calls[0][1])
    else:
        idx, sc = next(iter(calls.values()))
    idx = idx.reshape(bsz * s1, k)
    return torch.where(idx >= 0, idx + off, -1).to(torch.int32), sc.reshape(bsz * s1, k)


def context_parallel_fused_infer_attention_score(query, key, value, *, group=None, sharding,
                                                 atten_mask=None, actual_seq_lengths=None,
                                                 actual_seq_lengths_kv=None, block_table=None,
                                                 query_rope=None, key_rope=None, num_heads=1,
                                                 scale=1.0, input_layout="BSH",
                                                 num_key_value_heads=0, sparse_mode=0,
                                                 inner_precise=0, block_size=0,
                                                 softmax_lse_flag=False):
    """``kvflash.npu_fused_infer_attention_score`` decode (one query token per sequence) over a KV
    cache sharded across ``group``: each rank attends its shard with FIA (``softmax_lse_flag``
    on), and the partial (output, LSE) rows are merged exactly (docs/distributed.md).

    ``key`` / ``value`` (and MLA's ``key_rope``) are this rank's shard; the rest is given as for the
    single-process op in global terms. Layouts BSH / BSND / BNSD with query S = 1 (FIA's decode
    branch, or rope decode) and TND with one token per request (``actual_seq_lengths`` = 1, 2,
    ..., B). ``ContiguousShards`` for a non-paged B/S-layout cache, ``RoundRobinBlocks`` for a
    paged one (``block_table``, ``actual_seq_lengths_kv`` per request). ``atten_mask``: B/S layouts
    a decode mask over global positions (the shard's columns are taken, as for IFA); TND the
    compressed 2048 x 2048 mask of ``sparse_mode=3`` (every key of a decode row is visible).
    Returns ``(attention_out, softmax_lse)`` as the single-process op (the LSE ``[0]`` unless
    ``softmax_lse_flag``; +inf for a row with nothing to attend), the same bits on every rank.
    Not supported (ValueError): other output layouts, sparse modes other than 0 / 3, int8 KV or
    output, left padding, shared prefix (pass them to the single-process op).
    """
    op = "context_parallel_fused_infer_attention_score"
    _check_sharding(op, sharding)
    if input_layout not in ("BSH", "BSND", "BNSD", "TND"):
        _fail(op, f"input_layout must be BSH, BSND, BNSD or TND, got {input_layout!r}")
    if sparse_mode not in (0, 3) or isinstance(sparse_mode, bool):
        _fail(op, f"sparse_mode must be 0 or 3 (decode rows see every key), got {sparse_mode!r}")
    tnd = input_layout == "TND"
    _check_tensor(op, "query", query, (3,) if input_layout in ("BSH", "TND") else (4,))
    if isinstance(key, (list, tuple)) or isinstance(value, (list, tuple)):
        _fail(op, "key and value must be tensors (this rank's shard), not lists")
    if isinstance(num_heads, bool) or not isinstance(num_heads, int) or num_heads < 1:
        _fail(op, f"num_heads ({num_heads}) must be a positive int")
    q_lens = _host_ints(op, "actual_seq_lengths", actual_seq_lengths)
    kv_lens = _host_ints(op, "actual_seq_lengths_kv", actual_seq_lengths_kv)
    if tnd:
        t = query.shape[0]
        if q_lens is None or q_lens != list(range(1, len(q_lens) + 1)) or len(q_lens) != t:
            _fail(op, f"TND decode needs actual_seq_lengths 1, 2, ..., T (one token per request) "
                      f"for a query of {t} tokens, got {q_lens}")
        if atten_mask is not None and sparse_mode != 3:
            _fail(op, "TND: atten_mask is the compressed mask of sparse_mode=3")
        b = t
    else:
        s_axis = 2 if input_layout == "BNSD" else 1
        if query.shape[s_axis] != 1:
            _fail(op, f"query must hold one token per sequence (S = 1), got shape "
                      f"{tuple(query.shape)}")
        b = query.shape[0]
    if isinstance(sharding, RoundRobinBlocks):
        if block_table is None or kv_lens is None:
            _fail(op, "RoundRobinBlocks (a paged cache) needs block_table and "
                      "actual_seq_lengths_kv")
        _check_tensor(op, "block_table", block_table, (2,))
        _check_tensor(op, "key", key, (3, 4))
        if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:
            _fail(op, f"block_size ({block_size}) must be a positive int with block_table")
    else:
        if block_table is not None or tnd:
            _fail(op, "ContiguousShards describes a non-paged B/S-layout cache; use "
                      "RoundRobinBlocks with block_table")
        _check_tensor(op, "key", key, (query.dim(),))
    if isinstance(sharding, ContiguousShards):
        shard, s_glob = _contiguous_shard(sharding, group, key.shape[s_axis])
        local = shard.lengths(kv_lens if kv_lens is not None else [s_glob] * b)
    else:
        shard = _round_robin_shard(group, block_table, block_size, block_table.shape[0])
        local = shard.lengths(kv_lens)
    positions, local_bt = shard.positions(), shard.block_table
    mask = atten_mask if tnd else _slice_last(atten_mask, positions)
    if key.numel() == 0:  # an empty shard: an empty partial (LSE +inf), no local call
        kv_heads = num_key_value_heads or num_heads
        dv = value.shape[-1] // kv_heads * num_heads if input_layout == "BSH" else value.shape[-1]
        out = query.new_zeros(*query.shape[:-1], dv)
        lse = torch.full((b, num_heads, 1) if tnd else (b, num_heads, 1, 1), float("inf"))
    else:
        out, lse = _fia(query, key, value, atten_mask=mask, actual_seq_lengths=q_lens,
                        actual_seq_lengths_kv=local, block_table=local_bt,
                        query_rope=query_rope, key_rope=key_rope, num_heads=num_heads,
                        scale=scale, input_layout=input_layout,
                        num_key_value_heads=num_key_value_heads,
                        sparse_mode=sparse_mode, inner_precise=inner_precise,
                        block_size=block_size, softmax_lse_flag=True)
    # Rows (B or T, N) x Dv; an empty partial's LSE is +inf in FIA (D5) and -inf for the merge.
    d = out.shape[-1] // num_heads if input_layout == "BSH" else out.shape[-1]
    part_lse = torch.where(lse == float("inf"), torch.full_like(lse, float("-inf")), lse)
    merged, merged_lse = _merge_lse_partials(out, part_lse, b, num_heads, d, group, query.dtype)
    merged = merged.reshape(out.shape)
    if not softmax_lse_flag:
        return merged, torch.empty(0, dtype=torch.float32)
    merged_lse = torch.where(merged_lse == float("-inf"), torch.full_like(merged_lse, float("inf")),
                             merged_lse)
    return merged, merged_lse.reshape(lse.shape)

