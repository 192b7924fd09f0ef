"""torch.compile and torch.export: the fake kernels give the real kernels' output shapes on every
layout, and a compiled decode step (fullgraph) using both operators matches eager."""
import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

import kvflash
import kvflash.torch_npu as torch_npu
from support import IfaSpec, SfaSpec, build_ifa, build_sfa

IFA_LAYOUT_SPECS = [
    IfaSpec("fake_bsh", layout="BSH", heads=4, kv_heads=2, kvn_attr=2),
    IfaSpec("fake_bsnd", layout="BSND"),
    IfaSpec("fake_bnsd", layout="BNSD"),
    IfaSpec("fake_bsh_paged", layout="BSH", paged=True),
    IfaSpec("fake_bnsd_paged_bnsd_cache", layout="BNSD", paged=True, cache_bnsd=True),
    IfaSpec("fake_bsnd_int8_out", layout="BSND", int8_out="channel"),
    IfaSpec("fake_bsh_strided", layout="BSH", strided=True),
]

SFA_LAYOUT_SPECS = [
    SfaSpec(f"fake_{lq}_{lkv}_{lse}", layout_q=lq, layout_kv=lkv, lse=lse)
    for lq, lkv in [("BSND", "BSND"), ("TND", "TND"), ("BSND", "PA_BSND"), ("TND", "PA_BSND")]
    for lse in (True, False)
]


def _fake(mode, obj):
    if isinstance(obj, torch.Tensor):
        return mode.from_tensor(obj)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_fake(mode, o) for o in obj)
    if isinstance(obj, dict):
        return {k: _fake(mode, v) for k, v in obj.items()}
    return obj


def _same_meta(real, fake):
    assert fake.shape == real.shape
    assert fake.dtype == real.dtype
    assert fake.stride() == real.stride()
    assert fake.device == real.device


@pytest.mark.parametrize("spec", IFA_LAYOUT_SPECS, ids=str)
def test_ifa_fake_matches_real(spec):
    q, k, v, kw = build_ifa(spec)
    real = torch.ops.kvflash.npu_incre_flash_attention(q, k, v, **kw)
    real_ext = torch.ops.kvflash.incre_flash_attention(q, [k], [v], return_softmax_lse=True, **kw)
    with FakeTensorMode(allow_non_fake_inputs=False) as mode:
        fq, fk, fv, fkw = _fake(mode, (q, k, v, kw))
        fake = torch.ops.kvflash.npu_incre_flash_attention(fq, fk, fv, **fkw)
        fake_ext = torch.ops.kvflash.incre_flash_attention(fq, [fk], [fv], return_softmax_lse=True,
                                                           **fkw)
    _same_meta(real, fake)
    for r, f in zip(real_ext, fake_ext):
        _same_meta(r, f)


@pytest.mark.parametrize("spec", SFA_LAYOUT_SPECS, ids=str)
def test_sfa_fake_matches_real(spec):
    args, kw = build_sfa(spec)
    real = torch.ops.kvflash.npu_sparse_flash_attention(*args, **kw)
    with FakeTensorMode() as mode:
        fargs, fkw = _fake(mode, (args, kw))
        fake = torch.ops.kvflash.npu_sparse_flash_attention(*fargs, **fkw)
    for r, f in zip(real, fake):
        _same_meta(r, f)


def test_sfa_fake_takes_kv_heads_from_the_key_head_axis():
    """torch_npu's meta reads key.size(1) for PA_BSND, the block size; kvflash reads the head axis
    (size(-2)) on every layout: the softmax shape is [KV_N, T, N / KV_N] = [1, T, N]."""
    args, kw = build_sfa(SfaSpec("fake_pa_axis", layout_q="TND", layout_kv="PA_BSND",
                                 block_size=64, lse=True))
    with FakeTensorMode() as mode:
        fargs, fkw = _fake(mode, (args, kw))
        _, fmax, fsum = torch.ops.kvflash.npu_sparse_flash_attention(*fargs, **fkw)
    t, n = args[0].shape[0], args[0].shape[1]
    assert fmax.shape == (1, t, n) and fsum.shape == (1, t, n)


def test_opcheck():
    """torch.library.opcheck: schema, fake kernel vs real kernel, and AOT dispatch."""
    q, k, v, kw = build_ifa(IfaSpec("opcheck_ifa", paged=True, heads=4, kv_heads=2, kvn_attr=2))
    torch.library.opcheck(torch.ops.kvflash.npu_incre_flash_attention.default, (q, k, v), kw)
    torch.library.opcheck(torch.ops.kvflash.incre_flash_attention.default, (q, [k], [v]),
                          dict(kw, return_softmax_lse=True))
    args, skw = build_sfa(SfaSpec("opcheck_sfa", layout_q="TND", layout_kv="PA_BSND", lse=True))
    torch.library.opcheck(torch.ops.kvflash.npu_sparse_flash_attention.default, args, skw)


def _decode_inputs():
    q, k_cache, v_cache, ifa_kw = build_ifa(IfaSpec(
        "compile_ifa", layout="BSH", paged=True, block_size=16, heads=8, kv_heads=2, kvn_attr=2,
        lens=(21, 40)))
    sfa_args, sfa_kw = build_sfa(SfaSpec("compile_sfa", layout_q="TND", layout_kv="PA_BSND",
                                         lse=True, q_lens=(1, 1), sinks=True))
    return q, k_cache, v_cache, ifa_kw, sfa_args, sfa_kw


def decode_step(q, k_cache, v_cache, block_table, lens, sq, s_key, s_idx, s_bt, s_qlens,
                s_kvlens, s_qrope, s_krope, s_sinks):
    """One decode step of a model written for Ascend (torch_npu calls), with surrounding ops."""
    attn = torch_npu.npu_incre_flash_attention(
        q * 1.0, k_cache, v_cache, block_table=block_table, actual_seq_lengths=lens,
        num_heads=8, num_key_value_heads=2, scale_value=0.125, input_layout="BSH",
        block_size=16)
    out, softmax_max, softmax_sum = torch_npu.npu_sparse_flash_attention(
        sq, s_key, s_key, s_idx, 0.0417, block_table=s_bt, actual_seq_lengths_query=s_qlens,
        actual_seq_lengths_kv=s_kvlens, query_rope=s_qrope, key_rope=s_krope,
        layout_query="TND", layout_kv="PA_BSND", sparse_mode=3, attention_mode=2,
        return_softmax_lse=True, sinks=s_sinks)
    lse = softmax_max + torch.log(softmax_sum)
    return attn, out, softmax_max, softmax_sum, attn.float().sum(-1), out.float().mean(-1), lse


def _step_args():
    q, k, v, kw, (sq, s_key, _, s_idx, _), skw = _decode_inputs()
    return (q, k, v, kw["block_table"], kw["actual_seq_lengths"], sq, s_key, s_idx,
            skw["block_table"], skw["actual_seq_lengths_query"], skw["actual_seq_lengths_kv"],
            skw["query_rope"], skw["key_rope"], skw["sinks"])


def _assert_step_matches(got, eager):
    # The kvflash outputs (the first four) are the same bits compiled or eager. The surrounding
    # torch ops are inductor's code when compiled: its vectorised log and reductions may differ
    # from eager's by an ulp on some CPUs (seen on a Zen 5 host), so those get a few ulps.
    n_ops = 4
    for i, (e, c) in enumerate(zip(eager, got)):
        tol = 0 if i < n_ops else 4 * torch.finfo(torch.float32).eps
        torch.testing.assert_close(c, e, rtol=tol, atol=tol, equal_nan=True)


@pytest.mark.parametrize("dynamic", [False, True])
def test_compiled_decode_step_matches_eager(dynamic):
    torch._dynamo.reset()
    args = _step_args()
    eager = decode_step(*args)
    compiled = torch.compile(decode_step, fullgraph=True, dynamic=dynamic)
    _assert_step_matches(compiled(*args), eager)
    # a second step with other lengths (a decode loop) runs without breaking the graph
    args2 = list(args)
    args2[4] = [n + 1 for n in args[4]]
    _assert_step_matches(compiled(*args2), decode_step(*args2))


class DecodeStep(torch.nn.Module):
    def forward(self, *args):
        return decode_step(*args)


def test_export_matches_eager():
    args = _step_args()
    lens = args[4]
    # actual_seq_lengths is a host list: export specialises it (a constant of the graph).
    exported = torch.export.export(DecodeStep(), args)
    assert "kvflash.npu_incre_flash_attention" in str(exported.graph)
    assert "kvflash.npu_sparse_flash_attention" in str(exported.graph)
    got = exported.module()(*args)
    # the exported graph runs torch's eager kernels: every output the same bits
    for e, c in zip(decode_step(*args), got):
        torch.testing.assert_close(c, e, rtol=0, atol=0, equal_nan=True)
    assert lens == args[4]


def test_python_wrapper_compiles():
    q, k, v, kw, _, _ = _decode_inputs()

    def f(q, k, v):
        out, lse = kvflash.incre_flash_attention(q, k, v, return_softmax_lse=True, **kw)
        return out, lse

    torch._dynamo.reset()
    eager = f(q, k, v)
    got = torch.compile(f, fullgraph=True)(q, k, v)
    for e, c in zip(eager, got):
        torch.testing.assert_close(c, e, rtol=0, atol=0, equal_nan=True)


def test_ifa_list_form_fake_matches_real():
    q, k, v, kw = build_ifa(IfaSpec("fake_list", layout="BNSD", list_mode=True, lens=(4, 13, 9),
                                    batch=3, heads=4, kv_heads=2, kvn_attr=2))
    for lse in (False, True):
        real = torch.ops.kvflash.incre_flash_attention(q, k, v, return_softmax_lse=lse, **kw)
        with FakeTensorMode() as mode:
            fq, fk, fv, fkw = _fake(mode, (q, k, v, kw))
            fake = torch.ops.kvflash.incre_flash_attention(fq, fk, fv, return_softmax_lse=lse,
                                                           **fkw)
        for r, f in zip(real, fake):
            _same_meta(r, f)
