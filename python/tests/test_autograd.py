"""Backward through the operators (issue 19): kvflash computes the forward pass only, so a
backward raises a RuntimeError naming the operator ("... is not differentiable"), instead of torch's
"autograd kernel was not registered" warning and a None gradient. Without grad (no input requiring
it, torch.no_grad(), inference mode) nothing changes."""
import warnings

import pytest
import torch

import kvflash
from support import IfaSpec, SfaSpec, build_ifa, build_sfa


def _ifa_inputs():
    q, k, v, kw = build_ifa(IfaSpec("grad", layout="BNSD", heads=4, kv_heads=2, kvn_attr=2,
                                    lens=(5, 9), batch=2, slack=0))
    return q, k, v, kw


def _ifa_npu(q, k, v, kw):
    return torch.ops.kvflash.npu_incre_flash_attention(q, k, v, **kw)


def _ifa_ext(q, k, v, kw):
    return torch.ops.kvflash.incre_flash_attention(q, [k], [v], return_softmax_lse=True, **kw)[0]


@pytest.mark.parametrize("op", [_ifa_npu, _ifa_ext], ids=["npu_incre_flash_attention",
                                                         "incre_flash_attention"])
@pytest.mark.parametrize("grad_of", ["query", "key"])
def test_ifa_backward_raises(op, grad_of):
    q, k, v, kw = _ifa_inputs()
    (q if grad_of == "query" else k).requires_grad_()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # torch's "autograd kernel was not registered" warning
        out = op(q, k, v, kw)
    assert out.requires_grad and out.grad_fn is not None
    name = op.__name__.replace("_ifa_npu", "npu_incre_flash_attention").replace(
        "_ifa_ext", "incre_flash_attention")
    with pytest.raises(RuntimeError, match=f"kvflash::{name} is not differentiable"):
        out.float().sum().backward()
    assert q.grad is None and k.grad is None


def test_ifa_values_are_unchanged_by_grad_mode():
    q, k, v, kw = _ifa_inputs()
    want = _ifa_npu(q, k, v, kw)
    got = _ifa_npu(q.clone().requires_grad_(), k, v, kw)
    assert torch.equal(got.detach(), want)


def test_no_grad_and_inference_mode_give_plain_outputs():
    q, k, v, kw = _ifa_inputs()
    q.requires_grad_()
    with torch.no_grad():
        assert not _ifa_npu(q, k, v, kw).requires_grad
    with torch.inference_mode():
        assert not _ifa_npu(q, k, v, kw).requires_grad
    assert not _ifa_npu(q.detach(), k, v, kw).requires_grad


def test_sfa_backward_raises():
    args, kw = build_sfa(SfaSpec("grad"))
    q = args[0].clone().requires_grad_()
    out, smax, ssum = torch.ops.kvflash.npu_sparse_flash_attention(q, *args[1:], **kw)
    assert out.requires_grad
    with pytest.raises(RuntimeError, match="kvflash::npu_sparse_flash_attention is not "
                                           "differentiable"):
        out.float().sum().backward()


def test_merge_backward_raises():
    parts = torch.randn(2, 3, 8, requires_grad=True)
    lse = torch.randn(2, 3)
    out, merged_lse, _, _ = torch.ops.kvflash.merge_attention_states(parts, lse)
    assert out.requires_grad and merged_lse.requires_grad
    with pytest.raises(RuntimeError, match="kvflash::merge_attention_states is not "
                                           "differentiable"):
        out.sum().backward()


def test_int8_output_does_not_require_grad():
    """An integer output cannot carry a gradient: it is returned as a plain tensor."""
    q, k, v, kw = _ifa_inputs()
    q.requires_grad_()
    out = _ifa_npu(q, k, v, dict(kw, quant_scale2=torch.tensor([0.5]),
                                 quant_offset2=torch.tensor([0.0])))
    assert out.dtype == torch.int8 and not out.requires_grad
