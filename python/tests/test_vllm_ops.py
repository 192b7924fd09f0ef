"""vllm-ascend's attention path under torch_npu's names (docs/python.md, "vllm-ascend's attention
path"): the cache writes (npu_scatter_pa_kv_cache, _npu_reshape_and_cache: exact), ATB's paged
attention (_npu_paged_attention and its workspace), FlashAttentionScore (npu_fusion_attention:
output and softmax max / sum) and the LSE update (npu_attention_update), each against float64
(vllm_support); their refusals, named; fake kernels, torch.compile and opcheck."""
import math

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

import kvflash.torch_npu as torch_npu
from support import same_bits, strided_copy
from vllm_support import (TOKENS_MAX, attend, causal, check_lse, check_max_sum, check_out, f32,
                          gen, make_cache, paged_rows, randn, write_slots)

MASK = torch.triu(torch.ones(2048, 2048), diagonal=1).to(torch.int8)  # vllm-ascend's mask


# ------------------------------------------------------------------------------------------------
# The cache writes
# ------------------------------------------------------------------------------------------------

def _write_case(dtype, slot_dtype=torch.int32, tokens=7, nb=5, bs=16, kvn=2, dk=64, dv=64,
                seed=0):
    g = gen(seed)
    if dtype == torch.int8:
        key = torch.randint(-127, 127, (tokens, kvn, dk), generator=g, dtype=dtype)
        value = torch.randint(-127, 127, (tokens, kvn, dv), generator=g, dtype=dtype)
    else:
        key, value = randn((tokens, kvn, dk), dtype, g), randn((tokens, kvn, dv), dtype, g)
    kc, vc = make_cache(nb, bs, kvn, dk, dtype), make_cache(nb, bs, kvn, dv, dtype)
    perm = torch.randperm(nb * bs, generator=g)[:tokens]
    perm[1] = -1  # vLLM's PAD_SLOT_ID: the token is skipped
    return key, value, kc, vc, perm.to(slot_dtype)


@pytest.mark.parametrize("op", ["scatter", "atb"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.int8])
@pytest.mark.parametrize("slot_dtype", [torch.int32, torch.int64])
def test_cache_write_is_exact(op, dtype, slot_dtype):
    key, value, kc, vc, slots = _write_case(dtype, slot_dtype, dv=32)
    want_k, want_v = write_slots(kc, key, slots), write_slots(vc, value, slots)
    if op == "scatter":
        torch_npu.npu_scatter_pa_kv_cache(key, value, kc, vc, slots, cache_mode="Norm")
    else:
        torch_npu._npu_reshape_and_cache(key=key, value=value, key_cache=kc, value_cache=vc,
                                         slot_indices=slots)
    assert same_bits(kc, want_k) and same_bits(vc, want_v)


def test_cache_write_reads_strided_rows():
    """Keys and values as slices of a fused qkv projection (non-contiguous rows)."""
    g = gen(1)
    qkv = randn((9, 8 + 2 + 2, 64), torch.bfloat16, g)
    key, value = qkv[:, 8:10], strided_copy(qkv[:, 10:12], dim=1)
    kc, vc = make_cache(4, 16, 2, 64, torch.bfloat16), make_cache(4, 16, 2, 64, torch.bfloat16)
    slots = torch.tensor([3, 17, 18, 40, -1, 63, 0, 1, 2], dtype=torch.int32)
    want_k, want_v = write_slots(kc, key, slots), write_slots(vc, value, slots)
    torch_npu._npu_reshape_and_cache(key, value, kc, vc, slots)
    assert same_bits(kc, want_k) and same_bits(vc, want_v)


def test_scatter_key_only():
    """aclnnScatterPaKvCache's key-only call: 0-D value and value_cache."""
    key, _, kc, _, slots = _write_case(torch.float16)
    want = write_slots(kc, key, slots)
    empty = torch.empty((), dtype=torch.float16)
    torch_npu.npu_scatter_pa_kv_cache(key, empty, kc, empty.clone(), slots, cache_mode="Norm")
    assert same_bits(kc, want)


def test_cache_write_into_one_buffer():
    """vLLM's kv_cache (2, num_blocks, ...) and FlashInfer's (num_blocks, 2, ...): the halves of
    one buffer are written exactly; one cache passed as both is refused, nothing written."""
    key, value, _, _, slots = _write_case(torch.bfloat16)
    for layout in ("vllm", "flashinfer"):
        if layout == "vllm":
            kv = make_cache(2 * 5, 16, 2, 64, torch.bfloat16).view(2, 5, 16, 2, 64)
            kc, vc = kv[0], kv[1]
        else:
            kv = make_cache(5 * 2, 16, 2, 64, torch.bfloat16).view(5, 2, 16, 2, 64)
            kc, vc = kv[:, 0], kv[:, 1]
        want_k, want_v = write_slots(kc, key, slots), write_slots(vc, value, slots)
        torch_npu._npu_reshape_and_cache(key, value, kc, vc, slots)
        assert same_bits(kc, want_k) and same_bits(vc, want_v), layout
    before = kc.clone()
    with pytest.raises(ValueError, match="key_cache and value_cache share memory"):
        torch_npu._npu_reshape_and_cache(key, key, kc, kc, slots)
    assert same_bits(kc, before)


@pytest.mark.parametrize("slot,message", [
    (80, "slot_mapping[2] (80) is outside the cache: expected a slot in [0, 80)"),
    (4, "slot_mapping[0] and slot_mapping[2] are both 4"),
])
def test_bad_slot_is_refused_before_any_write(slot, message):
    key, value, kc, vc, slots = _write_case(torch.float16, nb=5, bs=16)
    slots[0], slots[2] = 4, slot
    before_k, before_v = kc.clone(), vc.clone()
    with pytest.raises(ValueError, match=r"\[kvflash::npu_scatter_pa_kv_cache\] " +
                       message.replace("[", r"\[").replace("(", r"\(").replace(")", r"\)")):
        torch_npu.npu_scatter_pa_kv_cache(key, value, kc, vc, slots, cache_mode="Norm")
    assert same_bits(kc, before_k) and same_bits(vc, before_v)
    with pytest.raises(ValueError, match="slot_indices"):
        torch_npu._npu_reshape_and_cache(key, value, kc, vc, slots)
    assert same_bits(kc, before_k) and same_bits(vc, before_v)


@pytest.mark.parametrize("change,message", [
    (dict(cache_mode=None), 'cache_mode "PA_NZ"'),
    (dict(cache_mode="PA_NZ"), 'cache_mode "PA_NZ"'),
    (dict(cache_mode="PA_BLK_BNSD"), 'cache_mode must be "Norm" or "PA_NZ", got "PA_BLK_BNSD"'),
    (dict(compress_lens=torch.ones(2, dtype=torch.int32)), "compress_lens"),
    (dict(compress_seq_offsets=torch.zeros(2, dtype=torch.int32)), "compress_seq_offsets"),
    (dict(seq_lens=torch.ones(2, dtype=torch.int32)), "seq_lens"),
    (dict(key_cache="bf16"), r"key_cache dtype \(bf16\) must be key's \(fp16\)"),
    (dict(slot_mapping="float"), "slot_mapping dtype must be int32 or int64"),
    (dict(slot_mapping="short"), r"slot_mapping must be \(T,\) = \(7,\), one slot per key row"),
    (dict(key_cache="heads"), "key_cache"),
])
def test_cache_write_refusals_name_the_argument(change, message):
    key, value, kc, vc, slots = _write_case(torch.float16)
    kw = dict(cache_mode="Norm")
    for name, v in change.items():
        if name == "key_cache":
            kc = kc.bfloat16() if v == "bf16" else kc[:, :, :1]
        elif name == "slot_mapping":
            slots = slots.float() if v == "float" else slots[:3]
        else:
            kw[name] = v
    if kw.get("cache_mode", "") is None:
        del kw["cache_mode"]  # torch_npu's default, "PA_NZ"
    with pytest.raises(ValueError, match=message):
        torch_npu.npu_scatter_pa_kv_cache(key, value, kc, vc, slots, **kw)


# ------------------------------------------------------------------------------------------------
# ATB's paged attention
# ------------------------------------------------------------------------------------------------

def _pa_case(dtype, lens, heads=8, kvn=2, dim=128, bs=128, nb=None, share=False, seed=2):
    """A decode batch over a NaN-filled cache: lens per sequence; share: every sequence's first
    block is sequence 0's (prefix caching)."""
    g = gen(seed)
    need = [math.ceil(n / bs) for n in lens]
    nb = nb or sum(need) + 2
    kc, vc = make_cache(nb, bs, kvn, dim, dtype), make_cache(nb, bs, kvn, dim, dtype)
    free = torch.randperm(nb, generator=g).tolist()
    width = max(need) + 1
    table = torch.zeros((len(lens), width), dtype=torch.int32)
    for b, n in enumerate(need):
        for i in range(n):
            table[b, i] = table[0, 0] if share and b > 0 and i == 0 else free.pop()
    for b, n in enumerate(lens):  # fill the positions each sequence reads
        for p in range(n):
            blk, off = int(table[b, p // bs]), p % bs
            if math.isnan(float(kc[blk, off, 0, 0])):
                kc[blk, off] = randn((kvn, dim), dtype, g)
                vc[blk, off] = randn((kvn, dim), dtype, g)
    q = randn((len(lens), heads, dim), dtype, g)
    return q, kc, vc, table, torch.tensor(lens, dtype=torch.int32)


def _pa_reference(q, kc, vc, table, lens, scale):
    outs, vmaxes = [], []
    for b, n in enumerate(lens.tolist()):
        k, v = paged_rows(kc, table[b], n), paged_rows(vc, table[b], n)
        o, vmax, *_ = attend(q[b:b + 1], k, v, scale)
        outs.append(o[0])
        vmaxes.append(vmax[0])
    return torch.stack(outs), torch.stack(vmaxes)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("lens,bs,share", [
    ((1, 300, 129, 700), 128, False),
    ((40, 17, 33), 16, True),  # prefix caching: the first block is shared
], ids=["bs128", "bs16_shared"])
@pytest.mark.parametrize("workspace", [False, True])
def test_paged_attention_matches_float64(dtype, lens, bs, share, workspace):
    q, kc, vc, table, ctx = _pa_case(dtype, lens, bs=bs, share=share)
    scale = 1 / math.sqrt(q.shape[-1])
    out = torch.empty_like(q)
    kw = {}
    if workspace:
        kw["workspace"] = torch_npu._npu_paged_attention_get_workspace(
            query=q, key_cache=kc, value_cache=vc, num_kv_heads=2, num_heads=8,
            scale_value=scale, block_table=table, context_lens=ctx, out=out)
        assert kw["workspace"].dtype == torch.uint8
    torch_npu._npu_paged_attention(query=q, key_cache=kc, value_cache=vc, num_kv_heads=2,
                                   num_heads=8, scale_value=scale, block_table=table,
                                   context_lens=ctx, out=out, **kw)
    want, vmax = _pa_reference(q, kc, vc, table, ctx, f32(scale))
    problem = check_out(f"paged_attention {lens}", out, want, vmax)
    assert not problem, problem


def test_paged_attention_workspace_serves_every_length():
    """The workspace of the table's capacity: one buffer for every later context_lens (a captured
    graph's replays)."""
    q, kc, vc, table, ctx = _pa_case(torch.float16, (5, 9), bs=16, nb=8)
    out = torch.empty_like(q)
    args = (q, kc, vc, 2, 8, 0.125, table, ctx, out)
    ws = torch_npu._npu_paged_attention_get_workspace(*args)
    longer = torch.tensor([table.shape[1] * 16] * 2, dtype=torch.int32)
    ws_long = torch_npu._npu_paged_attention_get_workspace(q, kc, vc, 2, 8, 0.125, table, longer,
                                                          out)
    assert ws.shape == ws_long.shape
    with FakeTensorMode() as mode:
        fargs = [_fake(mode, a) for a in args]
        assert torch_npu._npu_paged_attention_get_workspace(*fargs).shape == ws.shape


@pytest.mark.parametrize("change,message", [
    (dict(num_heads=3), r"num_heads \(3\) must be a multiple of num_kv_heads \(2\)"),
    (dict(context_lens=torch.tensor([5.0, 9.0])), "context_lens must be a 1-D integer CPU tensor"),
    (dict(context_lens=torch.tensor([5], dtype=torch.int32)),
     r"context_lens must hold one length per query row \(2\), got 1"),
    (dict(context_lens=torch.tensor([5, -1], dtype=torch.int32)),
     r"context_lens\[1\] \(-1\) must be >= 0"),
    (dict(context_lens=torch.tensor([5, 90], dtype=torch.int32)),
     r"block_table dim 1 \(2\) is too small: context_lens\[1\] \(90\)"),
    (dict(out="shape"), "out must have the query's shape"),
    (dict(value_cache="bf16"), r"value_cache dtype \(bf16\) must equal key_cache dtype \(fp16\)"),
    (dict(block_table="int64"), "block_table dtype must be int32"),
    (dict(query="2d"), r"query must be \[num_tokens, num_heads, head_size\]"),
])
def test_paged_attention_refusals_name_the_argument(change, message):
    q, kc, vc, table, ctx = _pa_case(torch.float16, (5, 9), bs=16)
    kw = dict(query=q, key_cache=kc, value_cache=vc, num_kv_heads=2, num_heads=8,
              scale_value=0.125, block_table=table, context_lens=ctx, out=torch.empty_like(q))
    for name, v in change.items():
        if v == "shape":
            v = torch.empty(2, 8, 64, dtype=torch.float16)
        elif v == "bf16":
            v = kw[name].bfloat16()
        elif v == "int64":
            v = kw[name].long()
        elif v == "2d":
            v = q.view(2, -1)
        kw[name] = v
    with pytest.raises(ValueError, match=r"\[kvflash::_npu_paged_attention\] " + message):
        torch_npu._npu_paged_attention(**kw)


# ------------------------------------------------------------------------------------------------
# FlashAttentionScore
# ------------------------------------------------------------------------------------------------

def _visible(mode, s1, s2, mask=None, pre=TOKENS_MAX, nxt=TOKENS_MAX):
    i, j = torch.arange(s1)[:, None], torch.arange(s2)[None, :]
    if mask is None:  # no mask: every position, whatever the mode (upstream)
        return torch.ones((s1, s2), dtype=torch.bool)
    if mode == 0:
        return ~mask[:s1, :s2].bool() & (j >= i - pre) & (j <= i + nxt)
    if mode == 1:
        return ~mask[:s1, :s2].bool()
    if mode == 2:
        return j <= i
    if mode == 3:
        return causal(s1, s2)
    d = s2 - s1
    return (j >= i + d - pre) & (j <= i + d + nxt)


def _fa_check(name, res, q_seqs, k_seqs, v_seqs, scale, vis, place):
    """res: npu_fusion_attention's tuple; *_seqs per batch [S, N, D]; place(list of per-batch
    [S1, N, ...]) -> the operator's layout."""
    out, smax, ssum, sout = res[:4]
    outs, vmaxes, maxes, sums = [], [], [], []
    for b, (q, k, v) in enumerate(zip(q_seqs, k_seqs, v_seqs)):
        o, vmax, mx, sm, _ = attend(q, k, v, scale, vis[b])
        outs.append(o)
        vmaxes.append(vmax.expand_as(o))
        maxes.append(mx)
        sums.append(sm)
    problem = check_out(name, out, place(outs), place(vmaxes))
    assert not problem, problem
    problem = check_max_sum(name, smax, ssum, place(maxes, stats=True), place(sums, stats=True))
    assert not problem, problem
    assert sout.shape == (0,) and sout.dtype == out.dtype


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize("mode", [0, 3])
def test_fusion_attention_tnd_matches_float64(dtype, mode):
    """vllm-ascend's two calls: the encoder's (TND, no mask, cumulative lengths, a padded tail
    announced by a trailing 0) and the prefill's (TND, the 2048 compressed mask, sparse_mode 3)."""
    g = gen(3)
    q_lens, kv_lens = (5, 1, 40), ((5, 1, 40) if mode == 0 else (9, 1, 70))
    heads, kvn, dim = 8, 2, 64
    tq, tk = sum(q_lens), sum(kv_lens)
    q = randn((tq + 3, heads, dim), dtype, g)  # 3 padding rows past the last length
    k, v = randn((tk, kvn, dim), dtype, g), randn((tk, kvn, dim), dtype, g)
    cq = torch.tensor(q_lens).cumsum(0).tolist()
    ck = torch.tensor(kv_lens).cumsum(0).tolist()
    kw = dict(atten_mask=MASK.bool(), sparse_mode=3) if mode == 3 else {}
    if mode == 3:
        kw["next_tockens"] = 0
    res = torch_npu.npu_fusion_attention(q, k, v, heads, "TND", scale=0.125,
                                         actual_seq_qlen=cq + ([0] if mode == 0 else []),
                                         actual_seq_kvlen=ck + ([0] if mode == 0 else []), **kw)
    assert res[0].shape == q.shape and res[1].shape == (tq + 3, heads, 8)
    assert res[4:] == (0, 0, heads * sum(a * b for a, b in zip(q_lens, kv_lens)))
    qs = list(q[:tq].split(q_lens))
    ks, vs = list(k.split(kv_lens)), list(v.split(kv_lens))
    vis = [_visible(mode, a, b, MASK if mode == 3 else None) for a, b in zip(q_lens, kv_lens)]

    def place(per_batch, stats=False):
        rows = torch.cat(per_batch)
        return torch.cat([rows, torch.zeros((3, *rows.shape[1:]), dtype=rows.dtype)])
    _fa_check(f"fa_tnd_{mode}", res, qs, ks, vs, f32(0.125), vis, place)


@pytest.mark.parametrize("layout", ["BSND", "BNSD", "BSH"])
@pytest.mark.parametrize("mode,pre,nxt", [(0, TOKENS_MAX, TOKENS_MAX), (0, 3, 1), (1, 0, 0),
                                          (2, 0, 0), (3, 0, 0), (4, 4, 0)])
def test_fusion_attention_batched_matches_float64(layout, mode, pre, nxt):
    g = gen(4)
    b, s1, s2, heads, kvn, dim = 2, 6, 11, 4, 2, 32
    q4, k4, v4 = (randn((b, s, n, dim), torch.float16, g)
                  for s, n in ((s1, heads), (s2, kvn), (s2, kvn)))
    if mode in (0, 1):
        mask = torch.rand((s1, s2), generator=g) < 0.3
        mask[:, 0] = False
    else:
        mask = MASK
    kw = dict(atten_mask=mask, sparse_mode=mode, pre_tockens=pre, next_tockens=nxt)

    def to(t):
        return {"BSND": t, "BNSD": t.transpose(1, 2).contiguous(),
                "BSH": t.reshape(t.shape[0], t.shape[1], -1)}[layout]
    res = torch_npu.npu_fusion_attention(to(q4), to(k4), to(v4), heads, layout, scale=0.2, **kw)
    assert res[1].shape == (b, heads, s1, 8) and res[6] == b * heads * s1 * s2
    vis = [_visible(mode, s1, s2, mask, pre, nxt)] * b

    def place(per_batch, stats=False):
        t = torch.stack(per_batch)  # [B, S1, N, ...]
        return t.transpose(1, 2) if stats else to(t)
    _fa_check(f"fa_{layout}_{mode}", res, list(q4), list(k4), list(v4), f32(0.2), vis, place)


@pytest.mark.parametrize("change,message", [
    (dict(keep_prob=0.9), r"keep_prob 0.900000 < 1 \(dropout\) is not supported"),
    (dict(pse=torch.zeros(1, 4, 6, 11)), "pse"),
    (dict(input_layout="SBH"), "input_layout SBH is not supported"),
    (dict(sparse_mode=5, prefix=[1, 1]), "prefix"),
    (dict(sparse_mode=7), r"sparse_mode 7 \(varlen outer split\)"),
    (dict(softmax_layout="TND"), 'softmax_layout "TND" is not supported'),
    (dict(sink=torch.zeros(4)), "sink is not supported"),
    (dict(head_num=3), r"head_num \(3\) must be a multiple of key's head count \(2\)"),
    (dict(actual_seq_qlen=[6, 12]), "actual_seq_qlen and actual_seq_kvlen are for input_layout TND"),
])
def test_fusion_attention_refusals_name_the_argument(change, message):
    g = gen(5)
    q, k = randn((2, 6, 4, 32), torch.float16, g), randn((2, 11, 2, 32), torch.float16, g)
    kw = dict(head_num=4, input_layout="BSND")
    kw.update(change)
    if kw["input_layout"] == "SBH":
        q, k = q.reshape(2, 6, -1), k.reshape(2, 11, -1)
    with pytest.raises(ValueError, match=r"\[kvflash::npu_fusion_attention\] .*" + message):
        torch_npu.npu_fusion_attention(q, k, k, **kw)


def test_fusion_attention_takes_length_tensors():
    """actual_seq_qlen / actual_seq_kvlen as 1-D integer CPU tensors (vllm-ascend builds them
    with torch.cumsum) give the lists' bits."""
    g = gen(6)
    q, k = randn((7, 4, 32), torch.bfloat16, g), randn((7, 4, 32), torch.bfloat16, g)
    lists = torch_npu.npu_fusion_attention(q, k, k, 4, "TND", actual_seq_qlen=[3, 7],
                                           actual_seq_kvlen=[3, 7])
    t = torch.tensor([3, 7], dtype=torch.int32)
    tensors = torch_npu.npu_fusion_attention(q, k, k, 4, "TND", actual_seq_qlen=t,
                                             actual_seq_kvlen=t)
    for a, b in zip(lists[:3], tensors[:3]):
        assert same_bits(a, b)


# ------------------------------------------------------------------------------------------------
# npu_attention_update
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("update_type", [0, 1])
def test_attention_update_matches_float64(dtype, update_type):
    g = gen(7)
    sp, rows, dim = 3, 10, 128
    lse = [randn((rows,), torch.float32, g, 3.0) for _ in range(sp)]
    lse[1][2] = float("-inf")  # an empty part of one row
    parts = [randn((rows, dim), dtype, g) for _ in range(sp)]
    out, lse_out = torch_npu.npu_attention_update(lse, parts, update_type)
    stacked = torch.stack(lse).double()
    m = torch.logsumexp(stacked, 0)
    w = torch.exp(stacked - m)
    want = (w[..., None] * torch.stack(parts).double()).sum(0)
    vmax = torch.stack(parts).double().abs().amax(0).amax(-1, keepdim=True).expand_as(want)
    assert out.dtype == dtype
    problem = check_out("attention_update", out, want, vmax)
    assert not problem, problem
    if update_type == 0:
        assert lse_out.shape == (0,)
    else:
        assert lse_out.dtype == torch.float32 and lse_out.shape == (rows,)
        problem = check_lse("attention_update", lse_out, m)
        assert not problem, problem


@pytest.mark.parametrize("change,message", [
    (dict(update_type=2), "update_type must be 0 \\(out\\) or 1 \\(out and lse_out\\), got 2"),
    (dict(lse="short"), "lse must hold as many tensors as local_out"),
    (dict(lse="fp16"), r"lse\[0\] dtype must be fp32"),
    (dict(lse="empty", local_out="empty"), "local_out must hold at least one tensor"),
])
def test_attention_update_refusals_name_the_argument(change, message):
    g = gen(8)
    kw = dict(lse=[randn((4,), torch.float32, g) for _ in range(2)],
              local_out=[randn((4, 16), torch.float32, g) for _ in range(2)], update_type=1)
    for name, v in change.items():
        if v == "short":
            v = kw[name][:1]
        elif v == "fp16":
            v = [t.half() for t in kw[name]]
        elif v == "empty":
            v = []
        kw[name] = v
    with pytest.raises(ValueError, match=r"\[kvflash::npu_attention_update\] " + message):
        torch_npu.npu_attention_update(**kw)


# ------------------------------------------------------------------------------------------------
# Schemas, fake kernels, torch.compile
# ------------------------------------------------------------------------------------------------

def _fake(mode, obj):
    if isinstance(obj, torch.Tensor):
        return mode.from_tensor(obj)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_fake(mode, o) for o in obj)
    return obj


def _fake_matches(op, args, kwargs):
    real = op(*args, **kwargs)
    with FakeTensorMode() as mode:
        fargs = [_fake(mode, a) for a in args]
        fkw = {k: _fake(mode, v) for k, v in kwargs.items()}
        fake = op(*fargs, **fkw)
    real = real if isinstance(real, tuple) else (real,)
    fake = fake if isinstance(fake, tuple) else (fake,)
    for r, f in zip(real, fake):
        if isinstance(r, torch.Tensor):
            assert (f.shape, f.dtype, f.stride()) == (r.shape, r.dtype, r.stride())
        elif isinstance(r, int) and not isinstance(f, torch.SymInt):
            assert f in (r, 0)  # seed / offset as given; numels


def test_fake_kernels_match_real():
    g = gen(9)
    q = randn((9, 4, 32), torch.float16, g)
    k = randn((9, 2, 32), torch.float16, g)
    fa = torch.ops.kvflash.npu_fusion_attention.default
    _fake_matches(fa, (q, k, k, 4, "TND"), dict(actual_seq_qlen=[4, 9], actual_seq_kvlen=[4, 9],
                                                 atten_mask=MASK, sparse_mode=3))
    _fake_matches(fa, (q.view(1, 9, 4, 32), k.view(1, 9, 2, 32), k.view(1, 9, 2, 32), 4,
                       "BSND"), {})
    upd = torch.ops.kvflash.npu_attention_update.default
    lse = [torch.zeros(9), torch.ones(9)]
    for t in (0, 1):
        _fake_matches(upd, (lse, [q.view(9, -1), q.view(9, -1)], t), {})


def test_opcheck():
    key, value, kc, vc, slots = _write_case(torch.float16)
    torch.library.opcheck(torch.ops.kvflash.npu_scatter_pa_kv_cache.default,
                          (key, value, kc, vc, slots), dict(cache_mode="Norm"))
    torch.library.opcheck(torch.ops.kvflash._npu_reshape_and_cache.default,
                          (key, value, kc.clone(), vc.clone(), slots))
    q, kc, vc, table, ctx = _pa_case(torch.float16, (5, 9), bs=16)
    pa_args = (q, kc, vc, 2, 8, 0.125, table, ctx, torch.empty_like(q))
    torch.library.opcheck(torch.ops.kvflash._npu_paged_attention.default, pa_args)
    torch.library.opcheck(torch.ops.kvflash._npu_paged_attention_get_workspace.default, pa_args)
    g = gen(10)
    qq, kk = randn((9, 4, 32), torch.float16, g), randn((9, 2, 32), torch.float16, g)
    torch.library.opcheck(torch.ops.kvflash.npu_fusion_attention.default, (qq, kk, kk, 4, "TND"),
                          dict(actual_seq_qlen=[4, 9], actual_seq_kvlen=[4, 9]))
    torch.library.opcheck(torch.ops.kvflash.npu_attention_update.default,
                          ([torch.zeros(9), torch.ones(9)], [qq.view(9, -1)] * 2, 1))


def _step(key, value, kc, vc, slots, q, table, ctx, ws, pq, pk, pv, lse, parts):
    """A compiled forward touching every operator: the cache write, the paged decode, a prefill and
    an LSE update."""
    torch_npu._npu_reshape_and_cache(key, value, kc, vc, slots)
    out = torch.empty_like(q)
    torch_npu._npu_paged_attention(q, kc, vc, 2, 8, 0.125, table, ctx, out, workspace=ws)
    pre = torch_npu.npu_fusion_attention(pq, pk, pv, 4, "TND", atten_mask=MASK, sparse_mode=3,
                                         scale=0.125, actual_seq_qlen=[4, 9],
                                         actual_seq_kvlen=[4, 9])
    merged, merged_lse = torch_npu.npu_attention_update(lse, parts, 1)
    return out * 1.0, pre[0], pre[1], merged, merged_lse


@pytest.mark.parametrize("dynamic", [False, True])
def test_compiled_step_matches_eager(dynamic):
    torch._dynamo.reset()
    q, kc, vc, table, ctx = _pa_case(torch.float16, (5, 9), bs=16)
    g = gen(11)
    key, value = randn((2, 2, 128), torch.float16, g), randn((2, 2, 128), torch.float16, g)
    slots = torch.stack([table[0, 0] * 16 + 5, table[1, 0] * 16 + 9]).to(torch.int32)
    ctx = ctx + 1  # the new tokens are read by the decode
    ws = torch_npu._npu_paged_attention_get_workspace(q, kc, vc, 2, 8, 0.125, table, ctx,
                                                      torch.empty_like(q))
    pq, pk = randn((9, 4, 32), torch.float16, g), randn((9, 2, 32), torch.float16, g)
    lse = [randn((9,), torch.float32, g) for _ in range(2)]
    parts = [randn((9, 64), torch.float16, g) for _ in range(2)]
    caches = (kc.clone(), vc.clone())
    eager = _step(key, value, kc, vc, slots, q, table, ctx, ws, pq, pk, pk, lse, parts)
    compiled = torch.compile(_step, fullgraph=True, dynamic=dynamic)
    kc2, vc2 = caches
    got = compiled(key, value, kc2, vc2, slots, q, table, ctx, ws, pq, pk, pk, lse, parts)
    assert same_bits(kc2, kc) and same_bits(vc2, vc)  # the in-place write happened once, the same
    for e, c in zip(eager, got):
        torch.testing.assert_close(c, e, rtol=0, atol=0, equal_nan=True)
