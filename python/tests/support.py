"""Input builders for the Python tests, and the checks against the C++ reference.

The builders only make data (seeded, small); every result is computed by kvflash, and checked by
the C++ double-precision reference with the project's comparators
(torch.ops.kvflash_testing.ifa_check / sfa_check: every element, the tolerances of
docs/conventions.md, the worst element reported). Slots the operators must not read (cache
positions past a length, unused blocks) hold NaN, so a stray read shows in the output.
"""
import dataclasses
import itertools
import math
import zlib
from typing import Optional

import torch

import kvflash

INT64_MAX = 9223372036854775807

# (case, dtype, worst |kvflash - SDPA|, worst |error| / tolerance) of the SDPA cross-checks.
SDPA_WORST = []


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def randn(shape, dtype, g, scale=1.0):
    return (torch.randn(shape, generator=g, dtype=torch.float64) * scale).to(dtype)


def same_bits(a, b):
    """True when a and b have one shape and dtype and the same bits (NaN payloads included)."""
    def bits(t):
        return t.contiguous().view(torch.uint8) if t.numel() else t
    return a.shape == b.shape and a.dtype == b.dtype and torch.equal(bits(a), bits(b))


def strided_copy(t, dim=-1, pad=3):
    """The same values as t in a non-contiguous view: a slice of a wider buffer along dim."""
    shape = list(t.shape)
    dim = dim % t.dim()
    shape[dim] += pad
    base = torch.full(shape, float("nan"), dtype=t.dtype) if t.is_floating_point() else \
        torch.zeros(shape, dtype=t.dtype)
    view = base.narrow(dim, 1, t.shape[dim])
    view.copy_(t)
    return view


# ------------------------------------------------------------------------------------------------
# IncreFlashAttention
# ------------------------------------------------------------------------------------------------

@dataclasses.dataclass
class IfaSpec:
    name: str
    layout: str = "BSH"
    dtype: torch.dtype = torch.float16
    batch: int = 2
    heads: int = 4
    kv_heads: int = 4
    dim: int = 64
    lens: tuple = (5, 9)
    slack: int = 3                  # cache positions past the longest length (NaN)
    pass_lengths: bool = True
    broadcast_length: bool = False  # actual_seq_lengths of length 1
    kvn_attr: Optional[int] = None  # num_key_value_heads passed (None: omitted, default 0)
    pass_heads: bool = True         # num_heads passed (False: default 1)
    pass_layout: bool = True        # input_layout passed (False: default "BSH")
    pass_scale: bool = True         # scale_value passed (False: default 1.0)
    mask: Optional[str] = None      # "BS", "B1S", "B11S", "BN1S", "1N1S", "111S"
    mask_dtype: torch.dtype = torch.bool
    mask_full_row: bool = False
    pse: Optional[str] = None       # "B" or "1"
    paged: bool = False
    cache_bnsd: bool = False
    block_size: int = 16
    int8_kv: Optional[str] = None   # "tensor" or "channel" (shape variant in antiquant_shape)
    antiquant_shape: int = 0
    antiquant_offset: bool = True
    int8_out: Optional[str] = None  # "tensor" or "channel"
    quant_offset: bool = True
    kv_padding: Optional[int] = None
    list_mode: bool = False
    strided: bool = False
    inner_precise: Optional[int] = None
    padding_mask: bool = False
    scale: Optional[float] = None   # None: 1.5 / sqrt(D)
    lse: bool = False               # the extension op with return_softmax_lse
    zero_masked: bool = False       # the extension op with zero_fully_masked_rows
    allow_mostly_empty: bool = False
    seed: int = 0

    def __str__(self):
        return self.name


def _qshape(s):
    n, d = s.heads, s.dim
    return {"BSH": (s.batch, 1, n * d), "BSND": (s.batch, 1, n, d), "BNSD": (s.batch, n, 1, d)}[s.layout]


def _kvshape(s, seq, batch=None):
    b = s.batch if batch is None else batch
    n, d = s.kv_heads, s.dim
    return {"BSH": (b, seq, n * d), "BSND": (b, seq, n, d), "BNSD": (b, n, seq, d)}[s.layout]


def _seq_axis(layout):
    return 2 if layout == "BNSD" else 1


def _kv_tensor(s, g, shape, seq_axis, lens_for_batches):
    """KV data; positions at or past each batch's length are NaN (or -128 for int8)."""
    if s.int8_kv:
        t = torch.randint(-128, 128, shape, generator=g, dtype=torch.int8)
    else:
        t = randn(shape, s.dtype, g)
    for b, n in enumerate(lens_for_batches):
        region = t[b].narrow(seq_axis - 1, n, shape[seq_axis] - n)
        region.fill_(-128 if s.int8_kv else float("nan"))
    return t


def build_ifa(s: IfaSpec):
    """(query, key, value, kwargs) of one call; key/value are lists in list mode."""
    g = _gen(zlib.crc32(s.name.encode()) + s.seed)
    B, N, KVN, D = s.batch, s.heads, s.kv_heads, s.dim
    lens = list(s.lens)
    assert len(lens) == B
    max_len = max(lens)
    kw = {}
    if s.pass_heads:
        kw["num_heads"] = N
    if s.kvn_attr is not None:
        kw["num_key_value_heads"] = s.kvn_attr
    if s.pass_layout:
        kw["input_layout"] = s.layout
    if s.pass_scale:
        kw["scale_value"] = s.scale if s.scale is not None else 1.5 / math.sqrt(D)
    # Without actual_seq_lengths every position of the KV tensors is attended: no NaN slots.
    nan_lens = lens if (s.pass_lengths or s.paged) else None

    q = randn(_qshape(s), s.dtype, g)
    if s.strided:
        q = strided_copy(q, dim=-1)

    seq_axis = _seq_axis(s.layout)
    if s.paged:
        bs = s.block_size
        blocks_per_seq = max(1, math.ceil(max_len / bs)) + 1
        used = [math.ceil(n / bs) for n in lens]
        num_blocks = sum(used) + 2
        perm = torch.randperm(num_blocks, generator=g).tolist()
        table = torch.full((B, blocks_per_seq), -1, dtype=torch.int32)
        it = iter(perm)
        for b in range(B):
            for j in range(used[b]):
                table[b, j] = next(it)
        if s.cache_bnsd:
            shape = (num_blocks, KVN, bs, D)
        else:
            shape = (num_blocks, bs, KVN * D)
        caches = []
        for _ in range(2):
            if s.int8_kv:
                c = torch.full(shape, -128, dtype=torch.int8)
            else:
                c = torch.full(shape, float("nan"), dtype=s.dtype)
            for b in range(B):
                for j in range(used[b]):
                    blk = int(table[b, j])
                    n = min(bs, lens[b] - j * bs)
                    if s.cache_bnsd:
                        dst = c[blk, :, :n, :]
                    else:
                        dst = c[blk, :n, :]
                    if s.int8_kv:
                        dst.copy_(torch.randint(-128, 128, dst.shape, generator=g, dtype=torch.int8))
                    else:
                        dst.copy_(randn(dst.shape, s.dtype, g))
            caches.append(c)
        k, v = caches
        kw["block_table"] = table
        kw["block_size"] = bs
        capacity = blocks_per_seq * bs
    elif s.list_mode:
        k, v = [], []
        for b in range(B):
            seq = lens[b] + s.slack + b  # differing S
            n = [lens[b]] if nan_lens else [seq]
            k.append(_kv_tensor(s, g, _kvshape(s, seq, 1), seq_axis, n))
            v.append(_kv_tensor(s, g, _kvshape(s, seq, 1), seq_axis, n))
        capacity = max(t.shape[seq_axis] for t in k)
    else:
        S = max_len + s.slack
        pad = s.kv_padding or 0
        if s.kv_padding is not None:
            # left padding: batch b's tokens are [S - pad - len_b, S - pad)
            k = randn(_kvshape(s, S), s.dtype, g) if not s.int8_kv else \
                torch.randint(-128, 128, _kvshape(s, S), generator=g, dtype=torch.int8)
            v = randn(_kvshape(s, S), s.dtype, g) if not s.int8_kv else \
                torch.randint(-128, 128, _kvshape(s, S), generator=g, dtype=torch.int8)
            for t in (k, v):
                for b in range(B):
                    start = S - pad - lens[b]
                    fill = -128 if s.int8_kv else float("nan")
                    t[b].narrow(seq_axis - 1, 0, start).fill_(fill)
                    t[b].narrow(seq_axis - 1, S - pad, pad).fill_(fill)
            kw["kv_padding_size"] = torch.tensor([pad], dtype=torch.int64)
        else:
            n = nan_lens or [S] * B
            k = _kv_tensor(s, g, _kvshape(s, S), seq_axis, n)
            v = _kv_tensor(s, g, _kvshape(s, S), seq_axis, n)
        if s.strided:
            k = strided_copy(k, dim=-1)
            v = strided_copy(v, dim=-1)
        capacity = S

    if s.pass_lengths or s.paged:
        kw["actual_seq_lengths"] = [lens[0]] if s.broadcast_length else lens

    if s.mask:
        width = capacity
        mshape = {"BS": (B, width), "B1S": (B, 1, width), "B11S": (B, 1, 1, width),
                  "BN1S": (B, N, 1, width), "1N1S": (1, N, 1, width),
                  "111S": (1, 1, 1, width)}[s.mask]
        m = torch.rand(mshape, generator=g) < 0.3
        if s.mask_full_row:
            m[0] = True
        kw["atten_mask"] = m.to(s.mask_dtype)
    if s.pse:
        kw["pse_shift"] = randn((B if s.pse == "B" else 1, N, 1, capacity), s.dtype, g)
    if s.int8_kv:
        if s.int8_kv == "tensor":
            shape = (2,)
        else:
            shape = [(2, KVN, 1, D), (2, 1, KVN, D), (2, KVN, D), (2, KVN * D)][s.antiquant_shape]
        kw["antiquant_scale"] = (torch.rand(shape, generator=g, dtype=torch.float64) * 0.02 + 0.005).to(s.dtype)
        if s.antiquant_offset:
            kw["antiquant_offset"] = randn(shape, s.dtype, g, scale=4.0)
    if s.int8_out:
        shape = (1,) if s.int8_out == "tensor" else (N, D)
        kw["quant_scale2"] = torch.rand(shape, generator=g, dtype=torch.float32) * 100 + 60
        if s.quant_offset:
            kw["quant_offset2"] = torch.randn(shape, generator=g, dtype=torch.float32) * 5
    if s.inner_precise is not None:
        kw["inner_precise"] = s.inner_precise
    if s.padding_mask:
        kw["padding_mask"] = torch.zeros(B, capacity, dtype=s.dtype)  # reserved: unused
    return q, k, v, kw


def run_ifa(s: IfaSpec):
    """Runs the case through the operator its spec names; returns (out, lse, q, k, v, kwargs)."""
    q, k, v, kw = build_ifa(s)
    if s.list_mode or s.lse or s.zero_masked:
        out, lse = kvflash.incre_flash_attention(q, k, v, return_softmax_lse=s.lse,
                                                 zero_fully_masked_rows=s.zero_masked, **kw)
    else:
        out = torch.ops.kvflash.npu_incre_flash_attention(q, k, v, **kw)
        lse = None
    return out, (lse if s.lse else None), q, k, v, kw


def check_ifa(s: IfaSpec, out, lse, q, k, v, kw):
    """The C++ reference's verdict on out (and lse): '' when every element is within tolerance."""
    ks = k if isinstance(k, list) else [k]
    vs = v if isinstance(v, list) else [v]
    return torch.ops.kvflash_testing.ifa_check(
        q, ks, vs, out, lse, zero_fully_masked_rows=s.zero_masked, case_name=s.name,
        allow_mostly_empty=s.allow_mostly_empty, **kw)


# ------------------------------------------------------------------------------------------------
# SparseFlashAttention
# ------------------------------------------------------------------------------------------------

D_NOPE, D_ROPE = 512, 64


@dataclasses.dataclass
class SfaSpec:
    name: str
    layout_q: str = "BSND"           # "BSND" | "TND"
    layout_kv: str = "BSND"          # "BSND" | "TND" | "PA_BSND"
    dtype: torch.dtype = torch.bfloat16
    batch: int = 2
    q_lens: tuple = (2, 3)           # query rows per batch (BSND: S1 = max; TND: prefix sums)
    kv_lens: tuple = (40, 70)
    heads: int = 4
    topk: int = 32
    sbs: int = 1                     # sparse_block_size (None: omitted)
    pass_sbs: bool = True
    sparse_mode: Optional[int] = 3   # None: omitted (default 3)
    sinks: bool = False
    lse: Optional[bool] = None       # return_softmax_lse (None: omitted)
    value: str = "same"              # "same": value is key; "none": None; "own": a distinct tensor
    block_size: int = 32
    pass_q_lens: bool = True         # BSND: actual_seq_lengths_query given
    pass_kv_lens: bool = True        # BSND: actual_seq_lengths_kv given
    strided_q: bool = True           # query / query_rope are slices of one [.., 576] tensor
    pass_tokens: bool = False        # pass pre_tokens / next_tokens (their only allowed value)
    scale: float = 1.0 / math.sqrt(576)
    bad_indices: bool = True         # some -1 padding and out-of-range indices
    allow_mostly_empty: bool = False
    seed: int = 0

    def __str__(self):
        return self.name


def build_sfa(s: SfaSpec):
    """(positional args, kwargs) of one npu_sparse_flash_attention call."""
    g = _gen(zlib.crc32(s.name.encode()) + s.seed)
    B, N = s.batch, s.heads
    qlens, kvlens = list(s.q_lens), list(s.kv_lens)
    D, R = D_NOPE, D_ROPE
    # query
    if s.layout_q == "TND":
        T1 = sum(qlens)
        qshape = (T1, N, D + R)
    else:
        S1 = max(qlens)
        qshape = (B, S1, N, D + R)
    qfull = randn(qshape, s.dtype, g)
    if s.strided_q:
        q, qr = qfull[..., :D], qfull[..., D:]
    else:
        q, qr = qfull[..., :D].contiguous(), qfull[..., D:].contiguous()
    kw = {}
    # kv
    if s.layout_kv == "PA_BSND":
        bs = s.block_size
        per_seq = max(math.ceil(n / bs) for n in kvlens) + 1
        used = [math.ceil(n / bs) for n in kvlens]
        nblocks = sum(used) + 1
        perm = torch.randperm(nblocks, generator=g).tolist()
        table = torch.full((B, per_seq), -1, dtype=torch.int32)
        it = iter(perm)
        for b in range(B):
            for j in range(used[b]):
                table[b, j] = next(it)
        kv = torch.full((nblocks, bs, 1, D + R), float("nan"), dtype=s.dtype)
        for b in range(B):
            for j in range(used[b]):
                n = min(bs, kvlens[b] - j * bs)
                kv[int(table[b, j]), :n] = randn((n, 1, D + R), s.dtype, g)
        kw["block_table"] = table
    elif s.layout_kv == "TND":
        T2 = sum(kvlens)
        kv = randn((T2, 1, D + R), s.dtype, g)
    else:
        S2 = max(kvlens) + 2
        kv = randn((B, S2, 1, D + R), s.dtype, g)
        for b in range(B):
            kv[b, kvlens[b]:] = float("nan")
    # The cache holds latent and rope side by side, as DeepSeek's does: key and key_rope are views.
    key, key_rope = kv[..., :D], kv[..., D:]
    if s.value == "same":
        value = key
    elif s.value == "none":
        value = None
    else:
        value = randn(key.shape, s.dtype, g)
        if s.layout_kv == "BSND":
            for b in range(B):
                value[b, kvlens[b]:] = float("nan")
    # indices: per query row, K token (or block) ids relative to the row's sequence
    rows = []  # (batch, row index within batch) per query row
    if s.layout_q == "TND":
        for b in range(B):
            rows += [(b, i) for i in range(qlens[b])]
        nrows = len(rows)
    else:
        S1 = max(qlens)
        rows = [(b, i) for b in range(B) for i in range(S1)]
        nrows = B * S1
    K = s.topk
    idx = torch.empty((nrows, K), dtype=torch.int32)
    for r, (b, i) in enumerate(rows):
        units = max(1, math.ceil(kvlens[b] / s.sbs))
        sel = torch.randint(0, units, (K,), generator=g, dtype=torch.int32)
        if s.bad_indices and K >= 4:
            if r % 3 == 1:
                sel[-2:] = -1                 # -1 ends the list
            if r % 4 == 2:
                sel[K // 2] = units + 5       # out of range: skipped
        idx[r] = sel
    if s.layout_q == "TND":
        sparse_indices = idx.reshape(nrows, 1, K)
    else:
        sparse_indices = idx.reshape(B, max(qlens), 1, K)
    # lengths
    if s.layout_q == "TND":
        kw["actual_seq_lengths_query"] = torch.tensor(qlens, dtype=torch.int32).cumsum(0).to(torch.int32)
    elif s.pass_q_lens:
        kw["actual_seq_lengths_query"] = torch.tensor(qlens, dtype=torch.int32)
    if s.layout_kv == "TND":
        kw["actual_seq_lengths_kv"] = torch.tensor(kvlens, dtype=torch.int32).cumsum(0).to(torch.int32)
    elif s.layout_kv == "PA_BSND" or s.pass_kv_lens:
        kw["actual_seq_lengths_kv"] = torch.tensor(kvlens, dtype=torch.int32)
    kw["query_rope"] = qr
    kw["key_rope"] = key_rope
    if s.pass_sbs:
        kw["sparse_block_size"] = s.sbs
    kw["layout_query"] = s.layout_q
    kw["layout_kv"] = s.layout_kv
    if s.sparse_mode is not None:
        kw["sparse_mode"] = s.sparse_mode
    if s.pass_tokens:
        kw["pre_tokens"] = INT64_MAX
        kw["next_tokens"] = INT64_MAX
    kw["attention_mode"] = 2
    if s.lse is not None:
        kw["return_softmax_lse"] = s.lse
    if s.sinks:
        kw["sinks"] = (torch.randn(N, generator=g, dtype=torch.float32) * 2)
    args = (q, key, value, sparse_indices, s.scale)
    return args, kw


def run_sfa(s: SfaSpec):
    args, kw = build_sfa(s)
    out = torch.ops.kvflash.npu_sparse_flash_attention(*args, **kw)
    return out, args, kw


def check_sfa(s: SfaSpec, out, args, kw):
    attention_out, softmax_max, softmax_sum = out
    q, key, value, idx, scale = args
    return torch.ops.kvflash_testing.sfa_check(
        q, key, value, idx, scale, attention_out, softmax_max, softmax_sum, case_name=s.name,
        allow_mostly_empty=s.allow_mostly_empty, **kw)


def build_li(layout_q="TND", layout_k="PA_BSND", dtype=torch.bfloat16, w_dtype=None, heads=8,
             sparse_count=16, q_lens=(1, 3), kv_lens=(40, 70), block_size=16, sparse_mode=3,
             return_value=False, seed=0):
    """A valid npu_lightning_indexer call: (query, key, weights, kwargs). Key rows are N(0, 1); a
    paged cache's blocks are handed out in shuffled order (two spare ones), unused table slots
    hold -1. Lengths are int32 tensors: TND prefix sums, per batch otherwise."""
    g = _gen(seed)
    w_dtype = dtype if w_dtype is None else w_dtype
    b = len(q_lens)
    if layout_q == "TND":
        t = sum(q_lens)
        q = randn((t, heads, 128), dtype, g)
        w = randn((t, heads), w_dtype, g)
        asq = torch.tensor(list(itertools.accumulate(q_lens)), dtype=torch.int32)
    else:
        s1 = max(q_lens)
        q = randn((b, s1, heads, 128), dtype, g)
        w = randn((b, s1, heads), w_dtype, g)
        asq = torch.tensor(q_lens, dtype=torch.int32)
    kw = dict(actual_seq_lengths_query=asq, layout_query=layout_q, layout_key=layout_k,
              sparse_count=sparse_count, sparse_mode=sparse_mode, return_value=return_value)
    if layout_k == "PA_BSND":
        per = [-(-n // block_size) for n in kv_lens]
        blocks = sum(per) + 2
        perm = torch.randperm(blocks, generator=g)
        table = torch.full((b, max(per) + 1), -1, dtype=torch.int32)
        at = 0
        for i, n in enumerate(per):
            table[i, :n] = perm[at:at + n].to(torch.int32)
            at += n
        k = randn((blocks, block_size, 1, 128), dtype, g)
        kw.update(block_table=table, actual_seq_lengths_key=torch.tensor(kv_lens, dtype=torch.int32))
    elif layout_k == "TND":
        k = randn((sum(kv_lens), 1, 128), dtype, g)
        kw["actual_seq_lengths_key"] = torch.tensor(list(itertools.accumulate(kv_lens)),
                                                    dtype=torch.int32)
    else:
        k = randn((b, max(kv_lens), 1, 128), dtype, g)
        kw["actual_seq_lengths_key"] = torch.tensor(kv_lens, dtype=torch.int32)
    return q, k, w, kw


def li_key_rows(k, kw, b, kv_first, n):
    """Batch b's first n logical key rows [n, 128] of a call built by build_li."""
    layout = kw["layout_key"]
    if layout == "PA_BSND":
        bs = k.shape[1]
        rows = [k[int(kw["block_table"][b, j // bs]), j % bs, 0] for j in range(n)]
        return torch.stack(rows) if rows else k.new_zeros((0, 128))
    if layout == "TND":
        return k[kv_first:kv_first + n, 0]
    return k[b, :n, 0]


def li_reference(q, k, w, kw):
    """The fp64 indexer per query row: a list of (scores [n] float64, magnitudes [n]) or None
    (a padding row), in row order (BSND b * S1 + i, TND t)."""
    tnd = kw["layout_query"] == "TND"
    asq = kw["actual_seq_lengths_query"].tolist()
    ask = kw["actual_seq_lengths_key"].tolist()
    key_tnd = kw["layout_key"] == "TND"
    rows = []
    b_count = len(asq)
    s1 = None if tnd else q.shape[1]
    for b in range(b_count):
        lq = asq[b] - (asq[b - 1] if tnd and b > 0 else 0)
        lkv = ask[b] - (ask[b - 1] if key_tnd and b > 0 else 0)
        kv_first = ask[b - 1] if key_tnd and b > 0 else 0
        q_first = (asq[b - 1] if b > 0 else 0) if tnd else b * s1
        count = lq if tnd else s1
        for i in range(count):
            if i >= lq:
                rows.append(None)
                continue
            r = q_first + i
            qr = (q[r] if tnd else q[b, i]).double()  # [N, 128]
            wr = (w[r] if tnd else w[b, i]).double()  # [N]
            n = lkv - lq + i + 1 if kw["sparse_mode"] == 3 else lkv
            n = max(0, min(n, lkv))
            keys = li_key_rows(k, kw, b, kv_first, n).double()
            dots = qr @ keys.T  # [N, n]
            scores = (wr[:, None] * dots.clamp(min=0)).sum(0)
            mags = (wr.abs()[:, None] * (qr.abs() @ keys.abs().T)).sum(0)
            rows.append((scores, mags))
    return rows


def check_li(indices, values, ref, sparse_count, heads, dtype):
    """Every row of indices [rows, K] (and values) against li_reference's rows: min(n, K)
    distinct valid indices then -1; no unselected key and no later key clearly above a selected
    one (by more than both fp32 tolerances); values the score rounded to dtype."""
    indices = indices.reshape(-1, sparse_count)
    if values is not None:
        values = values.reshape(-1, sparse_count).double()
    assert indices.shape[0] == len(ref)
    for r, row in enumerate(ref):
        got = indices[r].tolist()
        if row is None:
            assert got == [-1] * sparse_count, f"padding row {r}: {got}"
            continue
        scores, mags = row
        n = scores.shape[0]
        c = min(n, sparse_count)
        assert got[c:] == [-1] * (sparse_count - c), f"row {r}: {got}"
        sel = got[:c]
        assert len(set(sel)) == c and all(0 <= j < n for j in sel), f"row {r}: {sel}"
        tol = (128 + heads + 2) * 2.0 ** -24 * 1.01 * mags + 2.0 ** -100
        lo = scores - tol
        hi = scores + tol
        chosen = torch.tensor(sel, dtype=torch.long)
        rest = torch.ones(n, dtype=torch.bool)
        rest[chosen] = False
        if rest.any():
            assert not (lo[rest].max() > hi[chosen].min()), f"row {r}: an unselected key ranks above"
        for a in range(c - 1):
            assert not (lo[sel[a + 1]] > hi[sel[a]]), f"row {r}: slot {a + 1} above slot {a}"
        if values is not None:
            u = 2.0 ** -8 if dtype == torch.bfloat16 else 2.0 ** -11
            want = scores[chosen]
            err = (values[r, :c] - want).abs()
            allow = 2 * u * want.abs() + (1 + 2 * u) * tol[chosen]
            assert bool((err <= allow).all()), f"row {r}: values {values[r, :c]} vs {want}"
            assert bool((values[r, c:] == -math.inf).all()), f"row {r}: padding values"
