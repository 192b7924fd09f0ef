"""torch_npu's attention operators called the way torch_npu's own operator tests call them.

op-plugin's tests (test/test_custom_ops) compute a golden in the test itself with torch.matmul and a
softmax and compare the operator's output with it. These do the same through
``import kvflash.torch_npu as torch_npu``, for every query layout, sparse mode, mask shape and
dtype the torch_npu documentation lists for npu_fused_infer_attention_score (v1 and v2),
npu_prompt_flash_attention, npu_incre_flash_attention, npu_sparse_flash_attention and
npu_lightning_indexer (docs/fia-pfa-indexer.md §1 and §2, docs/python.md). The golden is plain
torch in float64 over the operator's (rounded) inputs, written here from the documented rules
(visibility per sparse mode, IFA's masks, SFA's selected positions, the indexer's score); it shares
no code with kvflash's reference library or its test support. Slots an operator must not read (KV
positions past a length, unused cache blocks) hold NaN, so a read shows in the output.

Tolerances (docs/semantics.md §0.2): an output element within rtol * (|golden| + max |V| of its
batch) with rtol 2^-10 (fp16) / 2^-7 (bf16); int8 output within 1; LSE within 2^-14
relative-or-absolute, +inf exactly; a row that sees nothing is 0 with LSE +inf.
"""
import itertools
from dataclasses import dataclass
from typing import Optional, Tuple

import pytest
import torch

import kvflash.torch_npu as torch_npu

F16, BF16 = torch.float16, torch.bfloat16
RTOL = {F16: 2.0 ** -10, BF16: 2.0 ** -7}
INF = float("inf")
TOKENS_MAX = 2147483647          # FIA's pre_tokens / next_tokens default
INT64_MAX = 9223372036854775807  # SFA's / the indexer's


def gen(seed):
    return torch.Generator().manual_seed(seed)


def randn(shape, dtype, g, scale=1.0):
    return (torch.randn(shape, generator=g, dtype=torch.float32) * scale).to(dtype)


def f32(x):
    """A Python float as the float32 the operators apply (scale, softmax_scale)."""
    return float(torch.tensor(x, dtype=torch.float32))


# ---- the golden: masked softmax attention in float64 ------------------------------------------

def attention(q, k, v, scale, visible, sink=None):
    """q [N, S1, D], k [KV_N, S2, D], v [KV_N, S2, Dv] (float64), visible [N|1, S1, S2] bool; sink
    [N] or None (it adds exp(sink - max) to the denominator only). Returns out [N, S1, Dv] and
    LSE [N, S1]; a row that sees nothing is 0 with LSE +inf."""
    n, s1, s2 = q.shape[0], q.shape[1], k.shape[1]
    if s2 == 0:
        return torch.zeros(n, s1, v.shape[-1], dtype=torch.float64), torch.full((n, s1), INF)
    g = n // k.shape[0]
    k, v = k.repeat_interleave(g, 0), v.repeat_interleave(g, 0)
    s = torch.matmul(q, k.transpose(1, 2)) * scale
    s = s.masked_fill(~visible.expand(n, s1, s2), -INF)
    m = s.amax(-1, keepdim=True)
    seen = torch.isfinite(m)
    m = torch.where(seen, m, torch.zeros_like(m))
    e = torch.exp(s - m)
    den = e.sum(-1, keepdim=True)
    if sink is not None:
        den = den + torch.exp(sink.double().view(n, 1, 1) - m)
    out = torch.where(seen, torch.matmul(e, v) / den, torch.zeros(()).double())
    lse = torch.where(seen, m + torch.log(den), torch.full_like(m, INF)).squeeze(-1)
    return out, lse


def band(mode, pre, nxt, s1, s2, has_mask):
    """Visible (row, key) pairs [S1, S2] of a prefill batch by sparse mode (D3): mode 0 the band
    [i - pre, i + next] when a mask is given (everything otherwise), 1 everything (the mask alone),
    2 j <= i, 3 j <= i + S2 - S1, 4 [i + d - pre, i + d + next] with d = S2 - S1."""
    i = torch.arange(s1).view(-1, 1)
    j = torch.arange(s2).view(1, -1)
    d = s2 - s1
    if mode == 0 and has_mask:
        return (j >= i - pre) & (j <= i + nxt)
    if mode == 2:
        return j <= i
    if mode == 3:
        return j <= i + d
    if mode == 4:
        return (j >= i + d - pre) & (j <= i + d + nxt)
    return torch.ones(s1, s2, dtype=torch.bool)


def check_rows(got, want, vmax, dtype, what):
    got, want = got.double(), want.double()
    if dtype == torch.int8:
        bad = (got - want).abs() > 1
    else:
        bad = (got - want).abs() > RTOL[dtype] * (want.abs() + vmax)
    assert not bad.any(), (f"{what}: {int(bad.sum())} elements off, worst |err| "
                           f"{float((got - want).abs().max()):.3g}")


def check_lse(got, want, what):
    inf = torch.isinf(want)
    assert torch.equal(got[inf], want[inf].float()), f"{what}: LSE of empty rows must be +inf"
    err = (got[~inf].double() - want[~inf]).abs()
    assert (err <= 2.0 ** -14 * want[~inf].abs().clamp_min(1.0)).all(), f"{what}: LSE off"


# ---- layouts ----------------------------------------------------------------------------------

def split_layout(layout):
    return tuple(layout.split("_")) if "_" in layout else (layout, layout)


def to_layout(x, lay):
    """[B, N, S, D] as BSH / BSND / BNSD / NBSD."""
    if lay == "BSH":
        return x.permute(0, 2, 1, 3).reshape(x.shape[0], x.shape[2], -1)
    if lay == "BSND":
        return x.permute(0, 2, 1, 3)
    if lay == "NBSD":
        return x.permute(1, 0, 2, 3)
    return x


def from_layout(y, lay, n):
    """BSH / BSND / BNSD / NBSD back to [B, N, S, D]."""
    if lay == "BSH":
        return y.reshape(y.shape[0], y.shape[1], n, -1).permute(0, 2, 1, 3)
    if lay == "BSND":
        return y.permute(0, 2, 1, 3)
    if lay == "NBSD":
        return y.permute(1, 0, 2, 3)
    return y


def tokens(xs, lay):
    """Per-batch [N, S_b, D] pieces as TND [T, N, D] or NTD [N, T, D]."""
    t = torch.cat([x.permute(1, 0, 2) for x in xs], 0)
    return t.permute(1, 0, 2) if lay == "NTD" else t


def paged(ks, vs, block_size, kind, g):
    """Per-batch [KV_N, S_b, D] pieces in a paged cache: BnBsH (blocks, block_size, KV_N * D) or
    BnNBsD (blocks, KV_N, block_size, D), blocks handed out shuffled, one spare block of NaN; the
    block table (B, max blocks) int32."""
    per = [-(-k.shape[1] // block_size) for k in ks]
    nblocks = sum(per) + 1
    order = torch.randperm(nblocks, generator=g)
    table = torch.zeros(len(ks), max(per), dtype=torch.int32)
    kvn, d, dv = ks[0].shape[0], ks[0].shape[2], vs[0].shape[2]
    kc = torch.full((nblocks, kvn, block_size, d), float("nan"), dtype=ks[0].dtype)
    vc = torch.full((nblocks, kvn, block_size, dv), float("nan"), dtype=vs[0].dtype)
    at = 0
    for b, (k, v) in enumerate(zip(ks, vs)):
        for i in range(per[b]):
            blk = int(order[at])
            at += 1
            table[b, i] = blk
            n = min(block_size, k.shape[1] - i * block_size)
            kc[blk, :, :n] = k[:, i * block_size:i * block_size + n]
            vc[blk, :, :n] = v[:, i * block_size:i * block_size + n]
    if kind == "BnBsH":
        kc = kc.permute(0, 2, 1, 3).reshape(nblocks, block_size, kvn * d)
        vc = vc.permute(0, 2, 1, 3).reshape(nblocks, block_size, kvn * dv)
    return kc, vc, table


# ---- FusedInferAttentionScore (v1, v2) and PromptFlashAttention --------------------------------

# Mask shapes of the documents: full masks for Q_S > 1 ("S1S2": (S1, S2), "BS1S2": (B, S1, S2),
# "1S1S2": (1, S1, S2), "B1S1S2": (B, 1, S1, S2), "11S1S2": (1, 1, S1, S2)), IFA's for the
# decode branch ("BS": (B, S2), "B1S": (B, 1, S2), "B11S": (B, 1, 1, S2)), and the compressed mask
# of modes 2-4 ("c2": (2048, 2048), "c3": (1, 2048, 2048), "c4": (1, 1, 2048, 2048)).
FULL_SHAPES = {"S1S2": lambda b, s1, s2: (s1, s2), "BS1S2": lambda b, s1, s2: (b, s1, s2),
               "1S1S2": lambda b, s1, s2: (1, s1, s2), "B1S1S2": lambda b, s1, s2: (b, 1, s1, s2),
               "11S1S2": lambda b, s1, s2: (1, 1, s1, s2), "BS": lambda b, s1, s2: (b, s2),
               "B1S": lambda b, s1, s2: (b, 1, s2), "B11S": lambda b, s1, s2: (b, 1, 1, s2)}
COMPRESSED = {"c2": (2048, 2048), "c3": (1, 2048, 2048), "c4": (1, 1, 2048, 2048)}
# The compressed mask as torch_npu's documentation and vllm-ascend build it (its contents are the
# canonical lower triangle; kvflash does not read them, D3).
CAUSAL_2048 = torch.triu(torch.ones(2048, 2048), diagonal=1).to(torch.int8)


@dataclass
class Fia:
    op: str = "fia"                   # fia (v1), fia_v2, pfa
    layout: str = "BSND"              # input_layout, with its output variant
    dtype: torch.dtype = F16
    q_lens: Tuple[int, ...] = (5, 3)
    kv_lens: Tuple[int, ...] = (9, 6)
    heads: int = 4
    kv_heads: int = 2
    dim: int = 64
    sparse_mode: int = 0
    pre: Optional[int] = None         # None: the operator's default
    nxt: Optional[int] = None
    mask: Optional[str] = None        # a FULL_SHAPES or COMPRESSED key
    mask_dtype: torch.dtype = torch.bool
    lse: bool = False
    cache: Optional[str] = None       # BnBsH / BnNBsD (block_size 16)
    sink: bool = False                # v2's learnable_sink
    scale: Optional[float] = None     # default D^-0.5
    int8_out: bool = False            # quant_scale2 per tensor
    seed: int = 0

    @property
    def id(self):
        parts = [self.op, self.layout, str(self.dtype).split(".")[-1], f"m{self.sparse_mode}"]
        if self.pre is not None or self.nxt is not None:
            parts.append(f"p{self.pre}n{self.nxt}")
        if self.mask:
            parts.append(self.mask + ("" if self.mask in COMPRESSED
                                      else str(self.mask_dtype).split(".")[-1]))
        parts.append("q" + ".".join(map(str, self.q_lens)))
        for flag in ("lse", "sink", "int8_out"):
            if getattr(self, flag):
                parts.append(flag)
        if self.cache:
            parts.append(self.cache)
        return "-".join(parts)


def run_fia(c: Fia):
    """Builds the call, runs it, and checks every row against the float64 golden."""
    g = gen(c.seed)
    lay_in, lay_out = split_layout(c.layout)
    tnd = lay_in in ("TND", "NTD")
    B, N, KVN, D = len(c.q_lens), c.heads, c.kv_heads, c.dim
    S1, S2 = max(c.q_lens), max(c.kv_lens)
    decode = c.op != "pfa" and not tnd and S1 == 1  # D4: FIA's decode branch
    qs = [randn((N, c.q_lens[b] if tnd else S1, D), c.dtype, g) for b in range(B)]
    ks = [randn((KVN, c.kv_lens[b], D), c.dtype, g) for b in range(B)]
    vs = [randn((KVN, c.kv_lens[b], D), c.dtype, g) for b in range(B)]
    scale = c.scale if c.scale is not None else D ** -0.5
    kw = {}
    if tnd:
        query = tokens(qs, lay_in)
    else:
        query = to_layout(torch.stack(qs), lay_in)
    if c.cache:
        key, value, table = paged(ks, vs, 16, c.cache, g)
        kw["block_table"], kw["block_size"] = table, 16
    elif tnd:
        key, value = tokens(ks, lay_in), tokens(vs, lay_in)
    else:
        def padded(xs):  # KV past a batch's length: NaN, never read
            full = torch.full((B, KVN, S2, D), float("nan"), dtype=c.dtype)
            for b, x in enumerate(xs):
                full[b, :, :x.shape[1]] = x
            return to_layout(full, lay_in)
        key, value = padded(ks), padded(vs)
    cum = list(itertools.accumulate(c.q_lens)), list(itertools.accumulate(c.kv_lens))
    q_lens = cum[0] if tnd else list(c.q_lens)
    kv_lens = cum[1] if tnd and not c.cache else list(c.kv_lens)
    full = None
    if c.mask in COMPRESSED:
        kw["atten_mask"] = CAUSAL_2048.view(COMPRESSED[c.mask])
    elif c.mask:
        shape = FULL_SHAPES[c.mask](B, S1, S2)
        full = torch.rand(shape, generator=g) < 0.3
        kw["atten_mask"] = full.to(c.mask_dtype)

    names = {"fia": ("num_heads", "scale", "actual_seq_lengths", "actual_seq_lengths_kv",
                     "softmax_lse_flag"),
             "fia_v2": ("num_query_heads", "softmax_scale", "actual_seq_qlen", "actual_seq_kvlen",
                        "return_softmax_lse"),
             "pfa": ("num_heads", "scale_value", "actual_seq_lengths", "actual_seq_lengths_kv",
                     None)}[c.op]
    kw.update({names[0]: N, names[1]: scale, names[2]: q_lens, names[3]: kv_lens,
               "input_layout": c.layout, "num_key_value_heads": KVN, "sparse_mode": c.sparse_mode})
    if names[4]:
        kw[names[4]] = c.lse
    if c.pre is not None:
        kw["pre_tokens"] = c.pre
    if c.nxt is not None:
        kw["next_tokens"] = c.nxt
    sink = None
    if c.sink:
        sink = randn((N,), c.dtype, g)
        kw["learnable_sink"] = sink
    qscale = None
    if c.int8_out:
        qscale = torch.tensor([40.0])
        kw["quant_scale2" if c.op != "fia_v2" else "quant_scale_out"] = qscale
    fn = {"fia": torch_npu.npu_fused_infer_attention_score,
          "fia_v2": torch_npu.npu_fused_infer_attention_score_v2,
          "pfa": torch_npu.npu_prompt_flash_attention}[c.op]
    res = fn(query, key, value, **kw)
    out, lse = (res, None) if c.op == "pfa" else res

    # Defaults of the schemas: FIA pre / next 2147483647, PFA next_tokens 0.
    pre = c.pre if c.pre is not None else TOKENS_MAX
    nxt = c.nxt if c.nxt is not None else (0 if c.op == "pfa" else TOKENS_MAX)
    # torch_npu's PFA eager path: sparse_mode 10-14 is mode - 10 (with inner_precise 0).
    mode = c.sparse_mode - 10 if c.op == "pfa" and c.sparse_mode >= 10 else c.sparse_mode
    if tnd:
        got = out if lay_out == "TND" else out.permute(1, 0, 2)
        assert got.shape == (sum(c.q_lens), N, D), got.shape
    else:
        got = from_layout(out, lay_out, N)
        assert got.shape == (B, N, S1, D), got.shape
    first = 0
    for b in range(B):
        s1, s2 = c.q_lens[b], c.kv_lens[b]
        q, k, v = qs[b].double(), ks[b].double(), vs[b].double()
        if decode:
            vis = torch.ones(1, 1, s2, dtype=torch.bool)  # D4: mode, pre, next ignored
            if full is not None:                          # IFA's (B, S2), (B, 1, S2), (B, 1, 1, S2)
                vis = vis & ~full[b].reshape(-1)[:s2].view(1, 1, s2)
        else:
            q = q[:, :s1]
            vis = band(mode, pre, nxt, s1, s2, c.mask is not None).unsqueeze(0)
            if full is not None:  # (S1, S2), (B|1, S1, S2), (B|1, 1, S1, S2)
                f = full if full.dim() == 2 else full[b if full.shape[0] > 1 else 0]
                f = f[0] if f.dim() == 3 else f
                vis = vis & ~f[:s1, :s2].unsqueeze(0)
        want, want_lse = attention(q, k, v, f32(scale), vis, sink)
        rows_b = want.shape[1]
        if tnd:
            g_rows = got[first:first + s1].permute(1, 0, 2)
        else:
            g_rows = got[b, :, :rows_b]
            assert (got[b, :, rows_b:] == 0).all(), f"{c.id}: padding rows must be 0"
        what = f"{c.id} batch {b}"
        if c.int8_out:
            want = (want * float(qscale)).round().clamp(-128, 127)
            check_rows(g_rows, want, 0.0, torch.int8, what)
        else:
            check_rows(g_rows, want, float(v.abs().max()) if s2 else 0.0, c.dtype, what)
        if c.lse:
            got_lse = lse[first:first + s1, :, 0].t() if tnd else lse[b, :, :rows_b, 0]
            check_lse(got_lse, want_lse, what)
        first += s1
    if c.op != "pfa" and not c.lse:
        assert lse.shape == (0,)


FIA_CASES = [
    # every query layout and output variant (FIA document, inputLayout), fp16 and bf16
    *[Fia(layout=lay, dtype=dt, sparse_mode=3, mask="c2", lse=True)
      for lay in ("BSH", "BSND", "BNSD", "BNSD_BSND", "BSH_NBSD", "BSND_NBSD", "BNSD_NBSD")
      for dt in (F16, BF16)],
    *[Fia(layout=lay, dtype=dt, sparse_mode=3, mask="c2", q_lens=(4, 7), kv_lens=(9, 7),
          lse=True)
      for lay in ("TND", "NTD", "TND_NTD", "NTD_TND") for dt in (F16, BF16)],
    # sparse modes 0-4 with every documented mask shape and mask dtype (D3)
    Fia(sparse_mode=0),
    *[Fia(sparse_mode=0, mask=m, mask_dtype=dt, pre=pre, nxt=nxt, q_lens=(5, 5))
      for m, dt, (pre, nxt) in zip(("S1S2", "BS1S2", "1S1S2", "B1S1S2", "11S1S2"),
                                   (torch.bool, torch.int8, torch.uint8, torch.bool, torch.int8),
                                   ((TOKENS_MAX, TOKENS_MAX), (2, 1), (0, 0), (3, -1),
                                    (TOKENS_MAX, 0)))],
    *[Fia(sparse_mode=1, mask=m, q_lens=(5, 5)) for m in ("S1S2", "B1S1S2")],
    *[Fia(sparse_mode=mode, mask=m, pre=pre, nxt=nxt, lse=True, dtype=BF16)
      for mode, pre, nxt in ((2, None, None), (3, None, None), (4, 2, 1), (4, 3, 0))
      for m in COMPRESSED],
    Fia(sparse_mode=3, mask="c4", q_lens=(8, 3), kv_lens=(5, 9), lse=True),  # S1 > S2: empty rows
    # the decode branch (D4): Q_S = 1 ignores sparse_mode / pre / next and needs no mask; IFA's
    # mask shapes
    *[Fia(layout=lay, q_lens=(1, 1, 1), kv_lens=(12, 1, 40), sparse_mode=mode, pre=pre, nxt=nxt,
          mask=m, lse=True)
      for lay, mode, pre, nxt, m in (
          ("BSND", 3, None, None, None), ("BNSD", 4, 0, 0, None), ("BSH", 2, None, None, "c3"),
          ("BSND", 1, None, None, None), ("BNSD", 4, -5, 2, "c4"), ("BSH", 0, None, None, "BS"),
          ("BSND", 0, None, None, "B1S"), ("BNSD", 1, None, None, "B11S"))],
    # paged caches: BnBsH with B/S and TND queries, BnNBsD with BNSD and TND (FIA document, PA)
    Fia(layout="BSND", cache="BnBsH", q_lens=(3, 3), kv_lens=(20, 33), sparse_mode=3, mask="c2"),
    Fia(layout="TND", cache="BnBsH", q_lens=(1, 6, 1), kv_lens=(17, 40, 33), sparse_mode=3,
        mask="c3", heads=8, kv_heads=2, dtype=BF16),
    Fia(layout="BNSD", cache="BnNBsD", q_lens=(1, 1), kv_lens=(30, 18), sparse_mode=3, lse=True),
    Fia(layout="TND", cache="BnNBsD", q_lens=(2, 5), kv_lens=(20, 9), sparse_mode=4, pre=4, nxt=0,
        mask="c4"),
    # int8 output (quant_scale2, per tensor)
    Fia(layout="BSND", int8_out=True, sparse_mode=3, mask="c2"),
    # op-plugin's own test of npu_fused_infer_attention_score: BNSD fp16, 32 heads, D 128,
    # scale 1 / 0.0078125, pre / next 65535, with and without the LSE, prefill and decode (query S
    # 2048 there, 64 here)
    *[Fia(layout="BNSD", heads=32, kv_heads=32, dim=128, q_lens=(s1,), kv_lens=(64,),
          scale=1 / 0.0078125, pre=65535, nxt=65535, lse=lse)
      for s1 in (64, 1) for lse in (False, True)],
    # v2: renamed arguments, the learnable sink, int8 output
    Fia(op="fia_v2", layout="TND", sink=True, sparse_mode=3, mask="c2", lse=True, dtype=BF16,
        q_lens=(4, 1, 6), kv_lens=(9, 8, 6)),
    Fia(op="fia_v2", layout="BSND", sink=True, q_lens=(1, 1), kv_lens=(7, 13), lse=True),
    Fia(op="fia_v2", layout="BNSD_BSND", sparse_mode=4, pre=2, nxt=1, mask="c3"),
    Fia(op="fia_v2", layout="BSH", int8_out=True),
    # PFA: its layouts, modes and masks; next_tokens defaults to 0 (mode 0 with a mask is causal);
    # no decode branch (Q_S = 1 applies its mode)
    *[Fia(op="pfa", layout=lay, dtype=dt, sparse_mode=3, mask="c2")
      for lay in ("BSH", "BSND", "BNSD", "BNSD_BSND") for dt in (F16, BF16)],
    Fia(op="pfa", layout="TND", sparse_mode=3, mask="c3", q_lens=(4, 7), kv_lens=(4, 7)),
    Fia(op="pfa", sparse_mode=0, mask="B1S1S2", q_lens=(5, 5)),         # next_tokens default 0
    Fia(op="pfa", sparse_mode=0, mask="S1S2", mask_dtype=torch.uint8, pre=2, nxt=1, q_lens=(5, 5)),
    Fia(op="pfa", sparse_mode=1, mask="1S1S2", q_lens=(5, 5)),
    *[Fia(op="pfa", sparse_mode=mode, mask=m, pre=pre, nxt=nxt, dtype=BF16)
      for mode, pre, nxt, m in ((2, None, None, "c4"), (3, None, None, "c3"), (4, 3, 1, "c2"))],
    Fia(op="pfa", sparse_mode=2, mask="c3", q_lens=(1, 1), kv_lens=(9, 5)),  # sees key 0 only
    Fia(op="pfa", sparse_mode=12, mask="c2"),                      # torch_npu: 10-14 is mode - 10
]


@pytest.mark.parametrize("case", FIA_CASES, ids=lambda c: c.id)
def test_fia_pfa(case):
    run_fia(case)


# ---- IncreFlashAttention ------------------------------------------------------------------------

@dataclass
class Ifa:
    layout: str = "BSND"              # BSH, BSND, BNSD
    dtype: torch.dtype = F16
    kv_lens: Tuple[int, ...] = (9, 30)
    heads: int = 8
    kv_heads: int = 2
    dim: int = 64
    mask: Optional[str] = None        # "BS", "B1S", "B11S"
    mask_dtype: torch.dtype = torch.bool
    cache: Optional[str] = None       # BnBsH (any layout), BnNBsD (BNSD)
    int8_kv: bool = False             # per-channel antiquant_scale / antiquant_offset
    seed: int = 0

    @property
    def id(self):
        parts = ["ifa", self.layout, str(self.dtype).split(".")[-1]]
        if self.mask:
            parts.append(self.mask + str(self.mask_dtype).split(".")[-1])
        if self.cache:
            parts.append(self.cache)
        if self.int8_kv:
            parts.append("int8kv")
        return "-".join(parts)


IFA_CASES = [
    *[Ifa(layout=lay, dtype=dt) for lay in ("BSH", "BSND", "BNSD") for dt in (F16, BF16)],
    *[Ifa(layout=lay, mask=m, mask_dtype=mdt)
      for lay, m, mdt in (("BSH", "BS", torch.bool), ("BSND", "B1S", torch.int8),
                          ("BNSD", "B11S", torch.uint8))],
    Ifa(layout="BSH", cache="BnBsH", dtype=BF16),
    Ifa(layout="BSND", cache="BnBsH", mask="B11S"),
    Ifa(layout="BNSD", cache="BnNBsD", kv_lens=(40, 3, 17)),
    *[Ifa(layout=lay, int8_kv=True) for lay in ("BSH", "BSND", "BNSD")],
]


@pytest.mark.parametrize("case", IFA_CASES, ids=lambda c: c.id)
def test_incre_flash_attention(case):
    c = case
    g = gen(c.seed)
    B, N, KVN, D = len(c.kv_lens), c.heads, c.kv_heads, c.dim
    S2 = max(c.kv_lens) + 3
    q = randn((B, N, 1, D), c.dtype, g)
    kv_dtype = torch.int8 if c.int8_kv else c.dtype
    if c.int8_kv:
        k = torch.randint(-127, 128, (B, KVN, S2, D), generator=g, dtype=torch.int8)
        v = torch.randint(-127, 128, (B, KVN, S2, D), generator=g, dtype=torch.int8)
        scale_kv = (torch.rand((2, KVN, 1, D), generator=g) * 0.02 + 0.01).to(c.dtype)
        offset_kv = (torch.rand((2, KVN, 1, D), generator=g) * 4 - 2).round().to(c.dtype)
    else:
        k, v = randn((B, KVN, S2, D), c.dtype, g), randn((B, KVN, S2, D), c.dtype, g)
        for b, n in enumerate(c.kv_lens):  # past a length: NaN, never read
            k[b, :, n:] = float("nan")
            v[b, :, n:] = float("nan")
    kw = dict(num_heads=N, num_key_value_heads=KVN, scale_value=D ** -0.5,
              input_layout=c.layout, actual_seq_lengths=list(c.kv_lens))
    if c.cache:
        kc, vc, table = paged([k[b, :, :n] for b, n in enumerate(c.kv_lens)],
                              [v[b, :, :n] for b, n in enumerate(c.kv_lens)], 16, c.cache, g)
        if c.int8_kv:
            kc, vc = kc.nan_to_num(0).to(kv_dtype), vc.nan_to_num(0).to(kv_dtype)
        key, value = kc, vc
        kw.update(block_table=table, block_size=16)
    else:
        key, value = to_layout(k, c.layout), to_layout(v, c.layout)
    mask = None
    if c.mask:
        mask = torch.rand((B, S2), generator=g) < 0.3
        mask[:, 0] = False  # every row sees a key (IFA's fully masked row is its own rule)
        shape = {"BS": (B, S2), "B1S": (B, 1, S2), "B11S": (B, 1, 1, S2)}[c.mask]
        kw["atten_mask"] = mask.view(shape).to(c.mask_dtype)
    if c.int8_kv:
        # torch_npu's shapes: (2, H) for BSH, (2, N, D) for BSND, (2, N, 1, D) for BNSD
        shape = {"BSH": (2, KVN * D), "BSND": (2, KVN, D), "BNSD": (2, KVN, 1, D)}[c.layout]
        kw.update(antiquant_scale=scale_kv.reshape(shape),
                  antiquant_offset=offset_kv.reshape(shape))
    out = torch_npu.npu_incre_flash_attention(to_layout(q, c.layout), key, value, **kw)
    assert out.shape == to_layout(q, c.layout).shape and out.dtype == c.dtype
    got = from_layout(out, c.layout, N)
    for b, n in enumerate(c.kv_lens):
        kb, vb = k[b, :, :n].double(), v[b, :, :n].double()
        if c.int8_kv:  # (x + offset) * scale, per channel
            kb = (kb + offset_kv[0].double()) * scale_kv[0].double()
            vb = (vb + offset_kv[1].double()) * scale_kv[1].double()
        vis = torch.ones(1, 1, n, dtype=torch.bool)
        if mask is not None:
            vis = vis & ~mask[b, :n].view(1, 1, n)
        want, _ = attention(q[b].double(), kb, vb, f32(D ** -0.5), vis)
        check_rows(got[b], want, float(vb.abs().max()), c.dtype, f"{c.id} batch {b}")


# ---- SparseFlashAttention -----------------------------------------------------------------------

@pytest.mark.parametrize("layout_q,layout_kv", [("BSND", "BSND"), ("BSND", "PA_BSND"),
                                                ("TND", "TND"), ("TND", "PA_BSND")])
@pytest.mark.parametrize("sparse_mode", [0, 3])
@pytest.mark.parametrize("dtype,sbs", [(F16, 1), (BF16, 4)])
def test_sparse_flash_attention(layout_q, layout_kv, sparse_mode, dtype, sbs):
    g = gen(sparse_mode * 7 + sbs)
    N, D, DR, K, BS = 4, 512, 64, 6, 16
    q_lens, kv_lens = (2, 3), (13, 40)
    B = len(q_lens)
    tnd_q, tnd_kv = layout_q == "TND", layout_kv == "TND"
    S1 = max(q_lens)
    q = [randn((q_lens[b] if tnd_q else S1, N, D), dtype, g) for b in range(B)]
    qr = [randn((x.shape[0], N, DR), dtype, g) for x in q]
    kn = [randn((n, D), dtype, g) for n in kv_lens]
    kr = [randn((n, DR), dtype, g) for n in kv_lens]
    # indices: each row K distinct units (tokens, or blocks of sbs), some rows ended early by -1
    rows = []
    for b in range(B):
        for i in range(q[b].shape[0]):
            units = -(-kv_lens[b] // sbs)
            sel = torch.randperm(units, generator=g)[:K].to(torch.int32)
            sel = torch.cat([sel, torch.full((K - sel.numel(),), -1, dtype=torch.int32)])
            if (b + i) % 3 == 1:
                sel[K - 2:] = -1
            rows.append(sel)
    idx = torch.stack(rows)
    kw = dict(layout_query=layout_q, layout_kv=layout_kv, sparse_mode=sparse_mode,
              sparse_block_size=sbs, attention_mode=2, return_softmax_lse=True,
              pre_tokens=INT64_MAX, next_tokens=INT64_MAX)
    if tnd_q:
        query, query_rope = torch.cat(q), torch.cat(qr)
        sparse_indices = idx.view(-1, 1, K)
        kw["actual_seq_lengths_query"] = torch.tensor(list(itertools.accumulate(q_lens)),
                                                      dtype=torch.int32)
    else:
        query, query_rope = torch.stack(q), torch.stack(qr)
        sparse_indices = idx.view(B, S1, 1, K)
        kw["actual_seq_lengths_query"] = torch.tensor(q_lens, dtype=torch.int32)
    if layout_kv == "PA_BSND":
        kc, rc, table = paged([x.view(1, -1, D) for x in kn], [x.view(1, -1, DR) for x in kr],
                              BS, "BnNBsD", g)
        key, key_rope = kc.permute(0, 2, 1, 3), rc.permute(0, 2, 1, 3)  # (blocks, bs, 1, D)
        kw.update(block_table=table, actual_seq_lengths_kv=torch.tensor(kv_lens, dtype=torch.int32))
    elif tnd_kv:
        key, key_rope = torch.cat(kn).unsqueeze(1), torch.cat(kr).unsqueeze(1)
        kw["actual_seq_lengths_kv"] = torch.tensor(list(itertools.accumulate(kv_lens)),
                                                   dtype=torch.int32)
    else:
        S2 = max(kv_lens)
        key = torch.full((B, S2, 1, D), float("nan"), dtype=dtype)
        key_rope = torch.full((B, S2, 1, DR), float("nan"), dtype=dtype)
        for b in range(B):
            key[b, :kv_lens[b], 0], key_rope[b, :kv_lens[b], 0] = kn[b], kr[b]
        kw["actual_seq_lengths_kv"] = torch.tensor(kv_lens, dtype=torch.int32)
    scale = 512 ** -0.5
    out, smax, ssum = torch_npu.npu_sparse_flash_attention(
        query, key, key, sparse_indices, scale, query_rope=query_rope, key_rope=key_rope, **kw)
    assert out.shape == query.shape and out.dtype == dtype
    r = 0
    for b in range(B):
        kall = torch.cat([kn[b], kr[b]], -1).double()
        for i in range(q[b].shape[0]):
            row = idx[r]
            r += 1
            # softmax_max / softmax_sum: [B, 1, S1, N] (BSND), [1, T, N] (TND)
            at = (b, 0, i) if not tnd_q else (0, sum(q_lens[:b]) + i)
            got = out[b, i] if not tnd_q else out[at[1]]
            gmax, gsum = smax[at], ssum[at]
            if i >= q_lens[b]:  # a padding row of a BSND query: zeros
                assert (got == 0).all()
                continue
            # the documented selection: threshold, the first ceil(thr / sbs) entries, -1 ends
            thr = kv_lens[b] if sparse_mode == 0 else kv_lens[b] - q_lens[b] + i + 1
            sel = []
            for x in row[:min(K, max(0, -(-thr // sbs)))].tolist():
                if x == -1:
                    break
                sel += [p for p in range(x * sbs, x * sbs + sbs) if 0 <= p < thr]
            if not sel:
                assert (got == 0).all()
                continue
            qrow = torch.cat([q[b][i], qr[b][i]], -1).double()            # [N, 576]
            s = torch.matmul(qrow, kall[sel].t()) * f32(scale)             # [N, |sel|]
            m = s.amax(-1, keepdim=True)
            e = torch.exp(s - m)
            want = torch.matmul(e / e.sum(-1, keepdim=True), kn[b][sel].double())
            check_rows(got, want, float(kn[b][sel].double().abs().max()), dtype,
                       f"sfa {layout_q}/{layout_kv} mode {sparse_mode} row {b}.{i}")
            assert torch.allclose(gmax.double(), m.squeeze(-1), rtol=2e-6, atol=1e-5)
            assert torch.allclose(gsum.double(), e.sum(-1), rtol=1e-5)


# ---- the lightning indexer ----------------------------------------------------------------------

@pytest.mark.parametrize("layout_q,layout_k", [("BSND", "BSND"), ("BSND", "PA_BSND"),
                                               ("TND", "TND"), ("TND", "PA_BSND")])
@pytest.mark.parametrize("sparse_mode", [0, 3])
@pytest.mark.parametrize("dtype", [F16, BF16])
def test_lightning_indexer(layout_q, layout_k, sparse_mode, dtype):
    g = gen(sparse_mode + (dtype == BF16) * 3)
    N, D, K = 8, 128, 12
    q_lens, kv_lens = (3, 1), (20, 9)
    B = len(q_lens)
    S1 = max(q_lens)
    tnd_q = layout_q == "TND"
    q = [randn((q_lens[b] if tnd_q else S1, N, D), dtype, g) for b in range(B)]
    w = [randn((x.shape[0], N), dtype, g) for x in q]
    k = [randn((n, D), dtype, g) for n in kv_lens]
    kw = dict(layout_query=layout_q, layout_key=layout_k, sparse_count=K,
              sparse_mode=sparse_mode, return_value=True)
    if tnd_q:
        query, weights = torch.cat(q), torch.cat(w)
        kw["actual_seq_lengths_query"] = torch.tensor(list(itertools.accumulate(q_lens)),
                                                      dtype=torch.int32)
    else:
        query, weights = torch.stack(q), torch.stack(w)
        kw["actual_seq_lengths_query"] = torch.tensor(q_lens, dtype=torch.int32)
    if layout_k == "PA_BSND":
        kc, _, table = paged([x.view(1, -1, D) for x in k], [x.view(1, -1, D) for x in k], 16,
                             "BnNBsD", g)
        key = kc.permute(0, 2, 1, 3)
        kw.update(block_table=table,
                  actual_seq_lengths_key=torch.tensor(kv_lens, dtype=torch.int32))
    elif layout_k == "TND":
        key = torch.cat(k).unsqueeze(1)
        kw["actual_seq_lengths_key"] = torch.tensor(list(itertools.accumulate(kv_lens)),
                                                    dtype=torch.int32)
    else:
        key = torch.full((B, max(kv_lens), 1, D), float("nan"), dtype=dtype)
        for b in range(B):
            key[b, :kv_lens[b], 0] = k[b]
        kw["actual_seq_lengths_key"] = torch.tensor(kv_lens, dtype=torch.int32)
    indices, values = torch_npu.npu_lightning_indexer(query, key, weights, **kw)
    assert indices.dtype == torch.int32 and values.dtype == dtype
    for b in range(B):
        for i in range(q[b].shape[0]):
            at = (b, i, 0) if not tnd_q else (sum(q_lens[:b]) + i, 0)
            got, vals = indices[at].tolist(), values[at].double()
            if i >= q_lens[b]:  # a padding row
                assert got == [-1] * K
                continue
            limit = kv_lens[b] if sparse_mode == 0 else kv_lens[b] - q_lens[b] + i + 1
            limit = max(0, min(limit, kv_lens[b]))
            # score[s] = sum_h w[h] relu(q[h] . k[s]); its rounding bound from |w| |q| |k|
            dots = torch.matmul(q[b][i].double(), k[b][:limit].double().t())      # [N, limit]
            score = (w[b][i].double().view(-1, 1) * dots.clamp_min(0)).sum(0)
            bound = (w[b][i].double().abs().view(-1, 1) *
                     torch.matmul(q[b][i].double().abs(), k[b][:limit].double().abs().t())).sum(0)
            tol = 1e-5 * (float(bound.max()) if limit else 0.0)
            n = min(limit, K)
            assert got[n:] == [-1] * (K - n), (b, i, got)
            chosen = got[:n]
            assert len(set(chosen)) == n and all(0 <= s < limit for s in chosen), (b, i, got)
            cs = score[chosen]
            assert (cs[1:] <= cs[:-1] + tol).all(), "descending scores"
            rest = [s for s in range(limit) if s not in chosen]
            if rest and n:
                assert float(score[rest].max()) <= float(cs.min()) + tol, "the top scores"
            assert (vals[:n] - cs).abs().max() <= RTOL[dtype] * cs.abs().max() + tol
            assert torch.isinf(vals[n:]).all() and (vals[n:] < 0).all()
