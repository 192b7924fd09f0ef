"""PFA / FIA test inputs and a float64 torch reference (docs/fia-semantics.md, decisions D3-D8 of
docs/fia-pfa-indexer.md).

A case is described per batch (query rows, KV positions, heads); ``build_fia`` lays the logical
tensors out in the call's layout (BSH/BSND/BNSD/TND/NTD, paged BnBsH/BnNBsD caches), with NaN in
every slot the operator must not read (query rows and KV positions past a length, unused cache
blocks), and returns the call's arguments. ``reference`` computes the expected outputs directly in
float64: the visibility rule of each sparse mode, a masked softmax (with the learnable sink in the
sum), 0 / LSE +inf for rows that see nothing and for padding rows. ``check`` compares every element
against the tolerances of docs/conventions.md (|err| <= rtol * (|want| + max |V| of the row); int8
within 1; LSE 2^-10 + 2^-16 |want|) and returns the worst err / bound.
"""
import dataclasses
import math
import zlib
from typing import Optional

import torch

import kvflash

TOKENS_MAX = 2147483647
# (case, output dtype, worst |err| / bound, elements checked) of every check(); conftest.py reports
# the worst per dtype.
WORST = []
RTOL = {torch.float16: 2.0 ** -10, torch.bfloat16: 2.0 ** -7, torch.float32: 2.0 ** -16}


@dataclasses.dataclass
class FiaSpec:
    name: str
    op: str = "fia"                 # "fia" | "fia_v2" | "pfa"
    layout: str = "BSND"            # query layout: BSH BSND BNSD TND NTD
    out: str = ""                   # output half of input_layout ("BSND", "NBSD", "NTD", "TND")
    dtype: torch.dtype = torch.float16
    heads: int = 4
    kv_heads: int = 2
    dim: int = 64
    value_dim: int = 0              # 0: dim
    rope_dim: int = 0               # MLA query_rope / key_rope
    value_is_key: bool = False      # MLA absorbed: value is the key tensor
    q_lens: tuple = (3, 5)
    kv_lens: tuple = (7, 9)
    q_slack: int = 0                # query rows past the longest length (or past the last in TND)
    kv_slack: int = 2
    sparse_mode: int = 0
    pre_tokens: Optional[int] = None
    next_tokens: Optional[int] = None
    mask: Optional[str] = None      # "full" (B, 1, S1, S2) bool, "compressed" (2048, 2048) int8
    paged: bool = False
    cache_bnsd: bool = False        # BnNBsD (else BnBsH)
    block_size: int = 16
    lse: bool = False
    sink: bool = False
    int8_out: bool = False
    # int8 K/V, (x + offset) * scale (docs/conventions.md): "channel" | "tensor" | "token"
    antiquant: str = ""
    aq_split: bool = False          # key_/value_antiquant_* (v2: always its dequant_* names)
    q_pad: int = -1                 # query_padding_size when >= 0 (B/S layouts)
    kv_pad: int = -1                # kv_padding_size when >= 0 (contiguous B/S KV)
    prefix: int = 0                 # shared prefix length (its tensors hold prefix + 1 rows)
    pse: str = ""                   # pse_shift: "full" (B, N, S1, S2) | "bcast" (1, N, 1, S2)
    seed: int = 0

    def __str__(self):
        return self.name

    @property
    def dv(self):
        return self.value_dim or self.dim

    @property
    def input_layout(self):
        return self.layout + ("_" + self.out if self.out else "")

    @property
    def out_layout(self):
        return self.out or self.layout


def _gen(spec):
    return torch.Generator().manual_seed(zlib.crc32(spec.name.encode()) + spec.seed)


def _randn(shape, dtype, g, scale=1.0):
    return (torch.randn(shape, generator=g, dtype=torch.float64) * scale).to(dtype)


def _token(layout):
    return layout in ("TND", "NTD")


def _place(per_batch, layout, rows, fill, pack_heads=True, first=None):
    """Per-batch [n_b, H, D] tensors as one tensor of the layout (rows: S for B/S layouts, T for
    TND/NTD; unused rows `fill`; B/S layouts: batch b from row first[b], left padding)."""
    h, d = per_batch[0].shape[1], per_batch[0].shape[2]
    dtype = per_batch[0].dtype
    if _token(layout):
        flat = torch.full((rows, h, d), fill, dtype=dtype)
        t = 0
        for x in per_batch:
            flat[t:t + x.shape[0]] = x
            t += x.shape[0]
        return flat if layout == "TND" else flat.permute(1, 0, 2).contiguous()
    b = len(per_batch)
    full = torch.full((b, rows, h, d), fill, dtype=dtype)
    for i, x in enumerate(per_batch):
        f = first[i] if first else 0
        full[i, f:f + x.shape[0]] = x
    if layout == "BSH":
        return full.reshape(b, rows, h * d) if pack_heads else full
    if layout == "BSND":
        return full
    if layout == "BNSD":
        return full.permute(0, 2, 1, 3).contiguous()
    if layout == "NBSD":
        return full.permute(2, 0, 1, 3).contiguous()
    raise AssertionError(layout)


def _unplace(t, layout, lens, rows, heads):
    """The inverse of _place: per-batch [n_b, H, D] views."""
    if _token(layout):
        flat = t if layout == "TND" else t.permute(1, 0, 2)
        out, start = [], 0
        for n in lens:
            out.append(flat[start:start + n])
            start += n
        return out
    if layout == "BSH":
        t = t.reshape(t.shape[0], t.shape[1], heads, -1)
    elif layout == "BNSD":
        t = t.permute(0, 2, 1, 3)
    elif layout == "NBSD":
        t = t.permute(1, 2, 0, 3)
    return [t[b, :n] for b, n in enumerate(lens)]


@dataclasses.dataclass
class FiaCase:
    spec: FiaSpec
    args: tuple
    kwargs: dict
    q: list          # per batch [S1_b, N, D + Dr] float64 (rope appended)
    k: list          # per batch [S2_b, KV_N, D + Dr]
    v: list          # per batch [S2_b, KV_N, Dv]
    mask: Optional[torch.Tensor]   # (B, S1, S2) bool, True = masked (full masks only)
    sink: Optional[torch.Tensor]
    q_rows: int      # S1 (B/S layouts) or T
    q_first: list = None    # per batch: its first row in the S dim (left padding)
    rows: list = None       # per batch: its rows' mask / pse row indices
    cols: list = None       # per batch: its attended positions' mask / pse column indices
    pse: Optional[torch.Tensor] = None   # float64, as passed


def build_fia(spec: FiaSpec) -> FiaCase:
    g = _gen(spec)
    s = spec
    B, N, KVN, D, Dv, Dr = len(s.q_lens), s.heads, s.kv_heads, s.dim, s.dv, s.rope_dim
    dt = s.dtype
    token = _token(s.layout)
    qb = [_randn((n, N, D), dt, g) for n in s.q_lens]
    qrb = [_randn((n, N, Dr), dt, g) for n in s.q_lens] if Dr else None
    if s.antiquant:
        def draw(n, d):
            return torch.randint(-100, 101, (n, KVN, d), generator=g, dtype=torch.int8)
    else:
        def draw(n, d):
            return _randn((n, KVN, d), dt, g)
    kb = [draw(n, D) for n in s.kv_lens]
    krb = [_randn((n, KVN, Dr), dt, g) for n in s.kv_lens] if Dr else None
    vb = kb if s.value_is_key else [draw(n, Dv) for n in s.kv_lens]
    nan = float("nan")
    kv_fill = 127 if s.antiquant else nan  # int8 has no NaN: unread slots hold the largest value
    q_rows = sum(s.q_lens) + s.q_slack if token else max(s.q_lens) + s.q_slack
    kv_rows = sum(s.kv_lens) + s.kv_slack if token else max(s.kv_lens) + s.kv_slack
    kw = {}
    # query left padding: batch b's rows end q_pad rows before the S dim's end (a window that
    # leaves the tensor makes the batch empty: all its rows are padding)
    q_first, q_eff = [0] * B, list(s.q_lens)
    if s.q_pad >= 0:
        assert not token
        kw["query_padding_size"] = torch.tensor([s.q_pad], dtype=torch.int64)
        for b, n in enumerate(s.q_lens):
            room = q_rows - n
            if s.q_pad > room:
                q_eff[b] = 0
            else:
                q_first[b] = room - s.q_pad
    qb = [x[:n] for x, n in zip(qb, q_eff)]
    qrb = [x[:n] for x, n in zip(qrb, q_eff)] if Dr else None
    kv_first = [0] * B
    if s.kv_pad >= 0:
        assert not token and not s.paged and max(s.kv_lens) + s.kv_pad <= kv_rows
        kw["kv_padding_size"] = torch.tensor([s.kv_pad], dtype=torch.int64)
        kv_first = [kv_rows - n - s.kv_pad for n in s.kv_lens]
    query = _place(qb, s.layout, q_rows, nan, first=q_first)
    query_rope = _place(qrb, s.layout, q_rows, nan, first=q_first) if Dr else None
    if s.paged:
        bs = s.block_size
        used = [math.ceil(n / bs) for n in s.kv_lens]
        per_seq = max(used) + 1
        nblocks = sum(used) + 2
        perm = torch.randperm(nblocks, generator=g).tolist()
        table = torch.zeros((B, per_seq), dtype=torch.int32)
        it = iter(perm)
        for b in range(B):
            for j in range(used[b]):
                table[b, j] = next(it)

        def cache(per_batch, d):
            c = torch.full((nblocks, bs, KVN, d), kv_fill, dtype=per_batch[0].dtype)
            for b, x in enumerate(per_batch):
                for j in range(used[b]):
                    n = min(bs, x.shape[0] - j * bs)
                    c[int(table[b, j]), :n] = x[j * bs:j * bs + n]
            if s.cache_bnsd:
                return c.permute(0, 2, 1, 3).contiguous()
            return c.reshape(nblocks, bs, KVN * d)
        key = cache(kb, D)
        value = key if s.value_is_key else cache(vb, Dv)
        key_rope = cache(krb, Dr) if Dr else None
        kw["block_table"] = table
        kw["block_size"] = bs
    else:
        key = _place(kb, s.layout, kv_rows, kv_fill, first=kv_first)
        value = key if s.value_is_key else _place(vb, s.layout, kv_rows, kv_fill, first=kv_first)
        key_rope = _place(krb, s.layout, kv_rows, nan, first=kv_first) if Dr else None
    k64 = [x.double() for x in kb]
    v64 = [x.double() for x in vb]
    if s.antiquant:
        k64, v64 = _antiquant(s, g, kw, k64, v64, kv_first,
                              per_seq * s.block_size if s.paged else kv_rows)
    P = s.prefix
    if P:
        # one shared prefix of P positions (its tensors one row longer, that row NaN), attended
        # before each batch's own KV
        assert not token and not s.antiquant and not Dr
        kp, vp = _randn((P, KVN, D), dt, g), _randn((P, KVN, Dv), dt, g)
        kw["key_shared_prefix"] = _place([kp], s.layout, P + 1, nan)
        kw["value_shared_prefix"] = _place([vp], s.layout, P + 1, nan)
        kw["actual_shared_prefix_len"] = [P]
        k64 = [torch.cat([kp.double(), x]) for x in k64]
        v64 = [torch.cat([vp.double(), x]) for x in v64]
    # mask / pse coordinates (docs/fia-semantics.md): row = the row in the S dim (TND: in the
    # batch), column = the prefix first, then the position in the batch's tensor (paged, TND: j)
    rows = [torch.arange(n) + (0 if token else f) for n, f in zip(q_eff, q_first)]
    cols = [torch.cat([torch.arange(P), P + f + torch.arange(n)])
            for n, f in zip(s.kv_lens, kv_first)]
    pse = None
    if s.pse:
        s1p = max(s.q_lens) if token else q_rows
        s2p = P + (max(s.kv_lens) if token or s.paged else kv_rows)
        shape = (B, N, s1p, s2p) if s.pse == "full" else (1, N, 1, s2p)
        kw["pse_shift"] = _randn(shape, dt, g, scale=1.5)
        pse = kw["pse_shift"].double()
    if token:
        q_lengths = torch.tensor(s.q_lens).cumsum(0).tolist()
        kv_lengths = list(s.kv_lens) if s.paged else torch.tensor(s.kv_lens).cumsum(0).tolist()
    else:
        q_lengths, kv_lengths = list(s.q_lens), list(s.kv_lens)
    mask = None
    if s.mask == "full":
        assert not token and not s.paged
        S1, S2 = q_rows, P + kv_rows
        mask = torch.rand((B, S1, S2), generator=g) < 0.25
        kw["atten_mask"] = mask.reshape(B, 1, S1, S2).clone()
    elif s.mask == "compressed":
        kw["atten_mask"] = torch.triu(torch.ones(2048, 2048), diagonal=1).to(torch.int8)
    sink = None
    if s.sink:
        sink = _randn((N,), dt, g, scale=2.0)
    scale = 1.0 / math.sqrt(D + Dr)
    names = _names(s.op)
    kw[names["num_heads"]] = N
    kw["num_key_value_heads"] = KVN
    kw[names["scale"]] = scale
    kw["input_layout"] = s.input_layout
    kw["sparse_mode"] = s.sparse_mode
    if s.pre_tokens is not None:
        kw["pre_tokens"] = s.pre_tokens
    if s.next_tokens is not None:
        kw["next_tokens"] = s.next_tokens
    kw[names["actual_seq_lengths"]] = q_lengths
    kw[names["actual_seq_lengths_kv"]] = kv_lengths
    if Dr:
        kw["query_rope"], kw["key_rope"] = query_rope, key_rope
    if s.lse:
        kw[names["softmax_lse_flag"]] = True
    if sink is not None:
        kw["learnable_sink"] = sink
    if s.int8_out:
        kw[names["quant_scale2"]] = torch.tensor([90.0])
        kw[names["quant_offset2"]] = torch.tensor([3.0])
    q64 = [torch.cat([a, b], -1).double() if Dr else a.double()
           for a, b in zip(qb, qrb or qb)]
    if Dr:
        k64 = [torch.cat([a, b.double()], -1) for a, b in zip(k64, krb)]
    return FiaCase(s, (query, key, value), kw, q64, k64, v64, mask,
                   None if sink is None else sink.double(), q_rows, q_first, rows, cols, pse)


def _antiquant(s, g, kw, k64, v64, kv_first, kv_cap):
    """Draws the antiquant parameters of s.antiquant into kw (combined antiquant_* of v1, split
    key_/value_antiquant_*, v2's dequant_*), fp32, and returns K / V dequantised as
    (x + offset) * scale. Per-token parameters index the position in the batch's tensor (paged:
    the logical position), kv_cap of them per batch."""
    B, KVN, D = len(s.kv_lens), s.kv_heads, s.dim
    assert s.dv == D and not s.value_is_key
    split = s.aq_split or s.op == "fia_v2"
    shape = {"channel": (KVN, D) if split else (2, KVN, 1, D), "tensor": (1,) if split else (2,),
             "token": (1 if split else 2, B, kv_cap)}[s.antiquant]

    def draw(lo, hi):
        return (lo + (hi - lo) * torch.rand(shape, generator=g, dtype=torch.float64)).float()
    params = [(draw(0.004, 0.02), draw(-3.0, 3.0)) for _ in range(1 if not split else 2)]

    def param(t, which, b, n):
        x = (t[which] if not split else t).double()
        if s.antiquant == "channel":
            return x.reshape(KVN, D)[None]
        if s.antiquant == "tensor":
            return x.reshape(-1)[0]
        f = 0 if s.paged else kv_first[b]
        return x.reshape(B, kv_cap)[b, f:f + n][:, None, None]

    def deq(xs, which):
        sc, off = params[which if split else 0]
        w = which if not split else 0
        return [(x + param(off, w, b, x.shape[0])) * param(sc, w, b, x.shape[0])
                for b, x in enumerate(xs)]
    mode = 1 if s.antiquant == "token" else 0
    if s.op == "fia_v2":
        kw.update(dequant_scale_key=params[0][0], dequant_offset_key=params[0][1],
                  dequant_scale_value=params[1][0], dequant_offset_value=params[1][1],
                  key_quant_mode=mode, value_quant_mode=mode)
    elif split:
        kw.update(key_antiquant_scale=params[0][0], key_antiquant_offset=params[0][1],
                  value_antiquant_scale=params[1][0], value_antiquant_offset=params[1][1],
                  key_antiquant_mode=mode, value_antiquant_mode=mode)
    else:
        kw.update(antiquant_scale=params[0][0], antiquant_offset=params[0][1],
                  antiquant_mode=mode)
    return deq(k64, 0), deq(v64, 1)


def _names(op):
    if op == "fia_v2":
        return dict(num_heads="num_query_heads", scale="softmax_scale",
                    actual_seq_lengths="actual_seq_qlen", actual_seq_lengths_kv="actual_seq_kvlen",
                    softmax_lse_flag="return_softmax_lse", quant_scale2="quant_scale_out",
                    quant_offset2="quant_offset_out")
    if op == "pfa":
        return dict(num_heads="num_heads", scale="scale_value",
                    actual_seq_lengths="actual_seq_lengths",
                    actual_seq_lengths_kv="actual_seq_lengths_kv", softmax_lse_flag=None,
                    quant_scale2="quant_scale2", quant_offset2="quant_offset2")
    return dict(num_heads="num_heads", scale="scale", actual_seq_lengths="actual_seq_lengths",
                actual_seq_lengths_kv="actual_seq_lengths_kv", softmax_lse_flag="softmax_lse_flag",
                quant_scale2="quant_scale2", quant_offset2="quant_offset2")


def run(case: FiaCase):
    """The operator's outputs (attention_out, softmax_lse or None) through kvflash.torch_npu's
    names."""
    s = case.spec
    if s.op == "pfa":
        return kvflash.npu_prompt_flash_attention(*case.args, **case.kwargs), None
    fn = kvflash.npu_fused_infer_attention_score_v2 if s.op == "fia_v2" else \
        kvflash.npu_fused_infer_attention_score
    out, lse = fn(*case.args, **case.kwargs)
    return out, (lse if s.lse else None)


def visible(spec, i, j, s1, s2, mask_b):
    """D3 / D4: [S1_b, S2_b] bool, whether row i sees column j."""
    s = spec
    decode = (s.op != "pfa" and not s.rope_dim and s.layout in ("BSH", "BSND", "BNSD")
              and max(s.q_lens) + s.q_slack == 1)
    if decode:
        return torch.ones((s1, s2), dtype=torch.bool)
    i = torch.arange(s1)[:, None]
    j = torch.arange(s2)[None, :]
    default_next = 0 if s.op == "pfa" else TOKENS_MAX
    pre = TOKENS_MAX if s.pre_tokens is None else s.pre_tokens
    nxt = default_next if s.next_tokens is None else s.next_tokens
    m = s.sparse_mode
    if m == 0:
        if mask_b is None:
            return torch.ones((s1, s2), dtype=torch.bool)
        return ~mask_b[:s1, :s2] & (j >= i - pre) & (j <= i + nxt)
    if m == 1:
        return ~mask_b[:s1, :s2]
    if m == 2:
        return j <= i
    d = s2 - s1
    if m == 3:
        return j <= i + d
    if m == 4:
        return (j >= i + d - pre) & (j <= i + d + nxt)
    raise AssertionError(m)


def reference(case: FiaCase):
    """Expected (attention_out, softmax_lse, bound): float64 tensors in the operator's output
    shapes (padding rows 0 / +inf), and the per-element tolerance of attention_out."""
    s = case.spec
    N, KVN = s.heads, s.kv_heads
    G = N // KVN
    scale = float(torch.tensor(1.0 / math.sqrt(s.dim + s.rope_dim), dtype=torch.float32))
    outs, lses, vmaxes = [], [], []
    for b, (q, k, v) in enumerate(zip(case.q, case.k, case.v)):
        s1, s2 = q.shape[0], k.shape[0]
        rows, cols = case.rows[b], case.cols[b]
        vis = visible(s, None, None, s1, s2,
                      None if case.mask is None else case.mask[b][rows][:, cols])
        kh = k.repeat_interleave(G, dim=1)  # [S2, N, Dq]
        vh = v.repeat_interleave(G, dim=1)
        scores = torch.einsum("ind,jnd->nij", q, kh) * scale
        if case.pse is not None:
            ps = case.pse[0 if case.pse.shape[0] == 1 else b]  # [N, S1 | 1, S2]
            ps = ps[:, rows if ps.shape[1] > 1 else torch.zeros_like(rows)]
            scores = scores + ps[:, :, cols]
        sc = scores.masked_fill(~vis, float("-inf"))
        mx = sc.amax(-1, keepdim=True)
        empty = ~vis.any(-1)  # [S1]
        mx = torch.where(torch.isfinite(mx), mx, torch.zeros_like(mx))
        p = torch.exp(sc - mx)
        total = p.sum(-1, keepdim=True)
        if case.sink is not None:
            total = total + torch.exp(case.sink.view(N, 1, 1) - mx)
        o = torch.einsum("nij,jnd->ind", p / total, vh)
        lse = (mx + torch.log(total)).squeeze(-1).transpose(0, 1)  # [S1, N]
        o[empty] = 0
        lse[empty] = float("inf")
        vabs = vh.abs().amax(-1)  # [S2, N]
        vmax = torch.where(vis[None], vabs.t()[:, None, :], torch.zeros(())).amax(-1).t()  # [S1, N]
        outs.append(o)
        lses.append(lse.unsqueeze(-1))
        vmaxes.append(vmax.unsqueeze(-1).expand(-1, -1, o.shape[-1]))
    layout_out = s.out_layout
    f = case.q_first
    want = _place(outs, layout_out, case.q_rows, 0.0, first=f)
    vmax = _place(vmaxes, layout_out, case.q_rows, 0.0, first=f)
    if _token(s.layout):
        lse = _place(lses, "TND", case.q_rows, float("inf"))  # [T, N, 1]
    else:
        lse = _place(lses, "BNSD", case.q_rows, float("inf"), first=f)  # [B, N, S1, 1]
    if s.int8_out:
        want = torch.clamp(torch.round(want * 90.0 + 3.0), -128, 127)
    return want, lse, vmax


def check(case: FiaCase, out, lse=None, record=True):
    """'' when every element of out (and lse) is within tolerance, else the first failures; and
    the worst |err| / bound (recorded in WORST unless `record` is False)."""
    want, want_lse, vmax = reference(case)
    s = case.spec
    assert out.shape == want.shape, (out.shape, want.shape)
    got = out.double()
    if s.int8_out:
        assert out.dtype == torch.int8
        bound = torch.ones_like(want)
    else:
        bound = RTOL[out.dtype] * (want.abs() + vmax)
    err = (got - want).abs()
    # rows with nothing visible and padding rows must be exactly 0 (bound 0 there)
    ok = (err <= bound) | ((got == want) & (bound == 0))
    worst = float((err / bound.clamp(min=1e-300)).masked_fill(bound == 0, 0).max()) \
        if want.numel() else 0.0
    problems = []
    if not bool(ok.all()):
        idx = (~ok).nonzero()[0].tolist()
        problems.append(f"[{s}] out{tuple(idx)}: got {got[tuple(idx)]} want {want[tuple(idx)]} "
                        f"bound {bound[tuple(idx)]} ({int((~ok).sum())} elements fail)")
    if lse is not None:
        assert lse.shape == want_lse.shape and lse.dtype == torch.float32, (lse.shape,
                                                                             want_lse.shape)
        lg = lse.double()
        finite = torch.isfinite(want_lse)
        lok = torch.where(finite, (lg - want_lse).abs() <= 2 ** -10 + 2 ** -16 * want_lse.abs(),
                          lg == want_lse)
        if not bool(lok.all()):
            idx = (~lok).nonzero()[0].tolist()
            problems.append(f"[{s}] lse{tuple(idx)}: got {lg[tuple(idx)]} want "
                            f"{want_lse[tuple(idx)]}")
    if record:
        WORST.append((str(s), str(out.dtype).replace("torch.", ""), worst, out.numel()))
    return "\n".join(problems), worst
