"""Float64 computations and checks for vllm-ascend's attention path (test_vllm_ops.py,
test_vllm_serving_loop.py): the cache write done slot by slot in Python, attention per sequence in
float64, and the comparisons of docs/conventions.md (every element within
``rtol * (|ref| + max|V| of the row)``; max / sum of FlashAttentionScore within the bounds of
tests/support/fia_max_sum.cpp; LSE within ``2^-10 + 2^-16 |lse|``).

Cache slots no call may read hold NaN (make_cache), so a stray read shows in an output.
"""
import math

import torch

RTOL = {torch.float16: 2.0 ** -10, torch.bfloat16: 2.0 ** -7, torch.float32: 2.0 ** -16}
TOKENS_MAX = 2147483647
# (check, output dtype, worst |err| / bound, elements) of every attention check; conftest.py may
# report it.
WORST = []


def gen(seed):
    return torch.Generator().manual_seed(seed)


def randn(shape, dtype, g, scale=1.0):
    return (torch.randn(shape, generator=g, dtype=torch.float64) * scale).to(dtype)


def f32(x):
    """x rounded to float32, as the kernels take a float attribute."""
    return float(torch.tensor(x, dtype=torch.float32))


def make_cache(num_blocks, block_size, kv_heads, dim, dtype):
    """A (num_blocks, block_size, kv_heads, dim) cache full of NaN (int8: -128)."""
    if dtype == torch.int8:
        return torch.full((num_blocks, block_size, kv_heads, dim), -128, dtype=dtype)
    return torch.full((num_blocks, block_size, kv_heads, dim), float("nan"), dtype=dtype)


def write_slots(cache, rows, slots):
    """The expected cache write: rows[t] into slot slots[t] (negative: skipped), bit for bit."""
    want = cache.clone()
    flat = want.view(-1, *cache.shape[2:])
    for t, s in enumerate(slots.tolist()):
        if s >= 0:
            flat[s] = rows[t]
    return want


def attend(q, k, v, scale, visible=None):
    """float64 attention of one sequence: q [S1, N, D], k / v [S2, KV_N, D(v)] (GQA: head h reads
    KV head h // (N / KV_N)), visible [S1, S2] bool or None (all). Returns (out [S1, N, Dv],
    vmax [S1, N, 1] (max |V| over the visible columns, the tolerance's atol term), max [S1, N],
    sum [S1, N], lse [S1, N]); rows with nothing visible give 0, 0, 0, 0, -inf."""
    q, k, v = q.double(), k.double(), v.double()
    g = q.shape[1] // k.shape[1]
    kh, vh = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)
    s1, s2 = q.shape[0], k.shape[0]
    if visible is None:
        visible = torch.ones((s1, s2), dtype=torch.bool)
    scores = torch.einsum("ind,jnd->nij", q, kh) * scale
    scores = scores.masked_fill(~visible, float("-inf"))
    mx = scores.amax(-1, keepdim=True)
    empty = ~visible.any(-1)  # [S1]
    mx = torch.where(torch.isfinite(mx), mx, torch.zeros_like(mx))
    p = torch.exp(scores - mx)
    total = p.sum(-1, keepdim=True)
    out = torch.einsum("nij,jnd->ind", p / total.clamp(min=1e-300), vh)
    vabs = vh.abs().amax(-1)  # [S2, N]
    vmax = torch.where(visible[None], vabs.t()[:, None, :], torch.zeros(())).amax(-1).t()
    lse = (mx + torch.log(total)).squeeze(-1).t()
    mx, total = mx.squeeze(-1).t(), total.squeeze(-1).t()
    out[empty] = 0
    mx[empty], total[empty], lse[empty] = 0, 0, float("-inf")
    return out, vmax.unsqueeze(-1), mx, total, lse


def causal(s1, s2):
    """Row i of the last s1 of s2 positions sees columns [0, s2 - s1 + i] (the bottom-right
    causal mask: sparse_mode 3, vLLM's chunked prefill)."""
    i = torch.arange(s1)[:, None]
    j = torch.arange(s2)[None, :]
    return j <= i + (s2 - s1)


def check_out(name, got, want, vmax):
    """'' when every element of got is within tolerance of the float64 want, else the first
    failure."""
    assert got.shape == want.shape, (name, got.shape, want.shape)
    assert not bool((want == 0).all()) or want.numel() == 0, f"{name}: an all-zero reference"
    bound = RTOL[got.dtype] * (want.abs() + vmax)
    err = (got.double() - want).abs()
    ok = (err <= bound) | ((got.double() == want) & (bound == 0))
    worst = float((err / bound.clamp(min=1e-300)).masked_fill(bound == 0, 0).max()) \
        if want.numel() else 0.0
    WORST.append((name, str(got.dtype).replace("torch.", ""), worst, got.numel()))
    if bool(ok.all()):
        return ""
    idx = tuple((~ok).nonzero()[0].tolist())
    return (f"{name} out{idx}: got {float(got[idx])} want {float(want[idx])} bound "
            f"{float(bound[idx])} ({int((~ok).sum())} elements fail)")


def check_max_sum(name, got_max, got_sum, want_max, want_sum):
    """FlashAttentionScore's softmax_max / softmax_sum: [..., 8] fp32, each row's value 8 times;
    max within 2^-10 + 2^-16 |max|, sum within 2^-9 sum; empty rows exactly 0."""
    assert got_max.dtype == torch.float32 and got_sum.dtype == torch.float32
    assert got_max.shape[-1] == 8 and got_max.shape == got_sum.shape
    wm = want_max.unsqueeze(-1).expand(got_max.shape)
    ws = want_sum.unsqueeze(-1).expand(got_sum.shape)
    gm, gs = got_max.double(), got_sum.double()
    ok = ((gm - wm).abs() <= 2 ** -10 + 2 ** -16 * wm.abs()) & ((gs - ws).abs() <= 2 ** -9 * ws)
    ok |= (ws == 0) & (gm == 0) & (gs == 0)
    if bool(ok.all()):
        return ""
    idx = tuple((~ok).nonzero()[0].tolist())
    return (f"{name} max/sum{idx}: got {float(gm[idx])} / {float(gs[idx])} want "
            f"{float(wm[idx])} / {float(ws[idx])}")


def check_lse(name, got, want):
    finite = torch.isfinite(want)
    ok = torch.where(finite, (got.double() - want).abs() <= 2 ** -10 + 2 ** -16 * want.abs(),
                     got.double() == want)
    if bool(ok.all()):
        return ""
    idx = tuple((~ok).nonzero()[0].tolist())
    return f"{name} lse{idx}: got {float(got[idx])} want {float(want[idx])}"


def paged_rows(cache, table_row, length):
    """The first `length` positions of a sequence in a (num_blocks, block_size, KV_N, D) cache."""
    block_size = cache.shape[1]
    ids = table_row[:math.ceil(length / block_size)].long()
    return cache[ids].reshape(-1, *cache.shape[2:])[:length]
