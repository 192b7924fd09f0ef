"""torch.ops.kvflash.lightning_indexer_scores (kvflash's extension of npu_lightning_indexer: the
selection and its fp32 scores): the same indices as npu_lightning_indexer on every layout pair,
scores against the float64 computation and rounded into its sparse_values bit for bit, -inf in
-1 slots, NaN scores kept, the fake kernel's shapes, torch.compile, backward refused, bad
arguments as ValueError naming them."""
import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from support import build_li, check_li, li_reference

LAYOUTS = [("BSND", "BSND"), ("TND", "TND"), ("BSND", "PA_BSND"), ("TND", "PA_BSND")]


def _both(layout_q, layout_k, **over):
    q, k, w, kw = build_li(layout_q, layout_k, return_value=True, **over)
    npu = torch.ops.kvflash.npu_lightning_indexer(q, k, w, **kw)
    kw.pop("return_value")
    return q, k, w, kw, npu, torch.ops.kvflash.lightning_indexer_scores(q, k, w, **kw)


@pytest.mark.parametrize("layout_q,layout_k", LAYOUTS)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("mode", [0, 3])
def test_the_npu_selection_with_fp32_scores(layout_q, layout_k, dtype, mode):
    q, k, w, kw, (indices, values), (idx, scores) = _both(layout_q, layout_k, dtype=dtype,
                                                          sparse_mode=mode, sparse_count=48)
    assert idx.dtype == torch.int32 and scores.dtype == torch.float32
    assert idx.shape == scores.shape == indices.shape
    assert torch.equal(idx, indices)
    assert bool((scores[idx < 0] == float("-inf")).all())
    assert torch.equal(scores.to(dtype).view(torch.int16), values.view(torch.int16))
    # the fp32 scores against float64 (check_li's tolerance, with no rounding to the query dtype)
    ref = li_reference(q, k, w, dict(kw, layout_query=layout_q, layout_key=layout_k))
    check_li(idx, None, ref, 48, q.shape[-2], dtype)
    flat_idx, flat_scores = idx.reshape(-1, 48), scores.reshape(-1, 48).double()
    for r, row in enumerate(ref):
        if row is None:
            continue
        s, mags = row
        live = flat_idx[r] >= 0
        want = s[flat_idx[r][live].long()]
        tol = (128 + q.shape[-2] + 2) * 2.0 ** -24 * 1.01 * mags[flat_idx[r][live].long()]
        assert bool(((flat_scores[r][live] - want).abs() <= tol + 2.0 ** -100).all()), r


def test_nan_scores_are_kept():
    q, k, w, kw = build_li("TND", "PA_BSND", sparse_count=8)
    w[0, 0] = float("nan")  # row 0: every score NaN, the keys in index order
    idx, scores = torch.ops.kvflash.lightning_indexer_scores(
        q, k, w, **{n: v for n, v in kw.items() if n != "return_value"})
    assert bool(torch.isnan(scores[0, 0]).all())
    assert idx[0, 0].tolist() == list(range(8))
    assert not bool(torch.isnan(scores[1:]).any())


@pytest.mark.parametrize("layout_q,layout_k", LAYOUTS)
def test_fake_matches_real(layout_q, layout_k):
    q, k, w, kw, _, real = _both(layout_q, layout_k)
    with FakeTensorMode() as mode:
        fq, fk, fw = (mode.from_tensor(t) for t in (q, k, w))
        fkw = {n: mode.from_tensor(v) if isinstance(v, torch.Tensor) else v for n, v in kw.items()}
        fake = torch.ops.kvflash.lightning_indexer_scores(fq, fk, fw, **fkw)
    for r, f in zip(real, fake):
        assert f.shape == r.shape and f.dtype == r.dtype and f.stride() == r.stride()


def test_compiles_fullgraph():
    q, k, w, kw, _, eager = _both("TND", "PA_BSND")
    fn = torch.compile(lambda q, k, w: torch.ops.kvflash.lightning_indexer_scores(q, k, w, **kw),
                       fullgraph=True, backend="eager")
    got = fn(q, k, w)
    assert torch.equal(got[0], eager[0]) and torch.equal(got[1].view(torch.int32),
                                                         eager[1].view(torch.int32))


def test_backward_is_refused():
    q, k, w, kw, _, _ = _both("TND", "PA_BSND")
    _, scores = torch.ops.kvflash.lightning_indexer_scores(q.requires_grad_(), k, w, **kw)
    with pytest.raises(RuntimeError, match="lightning_indexer_scores is not differentiable"):
        scores[scores.isfinite()].sum().backward()


@pytest.mark.parametrize("change,name", [
    (dict(sparse_count=0), "sparse_count"),
    (dict(sparse_mode=2), "sparse_mode"),
    (dict(pre_tokens=1), "pre_tokens"),
    (dict(layout_key="XYZ"), "layout_key"),
    (dict(block_table=None), "block_table"),
    (dict(actual_seq_lengths_key=None), "actual_seq_lengths_key"),
])
def test_bad_arguments_are_value_errors_naming_them(change, name):
    q, k, w, kw, _, _ = _both("TND", "PA_BSND")
    with pytest.raises(ValueError, match=name):
        torch.ops.kvflash.lightning_indexer_scores(q, k, w, **dict(kw, **change))


def test_return_value_is_not_an_argument():
    q, k, w, kw, _, _ = _both("TND", "PA_BSND")
    with pytest.raises(RuntimeError, match="return_value"):
        torch.ops.kvflash.lightning_indexer_scores(q, k, w, return_value=True, **kw)
