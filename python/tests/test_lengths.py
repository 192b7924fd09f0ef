"""Lengths given as tensors. Host length lists (issue 19): kvflash's functions take a 1-D integer
CPU tensor wherever torch_npu's schema has a host list (`SymInt[]?`), with the list's results; any
other tensor or type is a ValueError naming the argument. Length tensors (SFA's and the indexer's,
issue 29): int32 or int64, the same results, and an int64 entry is read whole."""
import pytest
import torch

import kvflash
import kvflash.torch_npu as torch_npu
from support import IfaSpec, SfaSpec, build_ifa, build_li, build_sfa

LENGTHS = [9, 4]


def _case(**spec):
    q, k, v, kw = build_ifa(IfaSpec("lengths", layout="BNSD", heads=4, kv_heads=2, kvn_attr=2,
                                    lens=tuple(LENGTHS), batch=2, **spec))
    kw = dict(kw)
    kw.pop("actual_seq_lengths", None)
    return q, k, v, kw


def _same(a, b):
    return torch.equal(a.view(torch.uint8), b.view(torch.uint8))


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int16, torch.uint8])
@pytest.mark.parametrize("paged", [False, True], ids=["contiguous", "paged"])
def test_tensor_lengths_equal_the_list(dtype, paged):
    q, k, v, kw = _case(paged=paged, block_size=16) if paged else _case()
    lengths = torch.tensor(LENGTHS, dtype=dtype)
    want = torch.ops.kvflash.npu_incre_flash_attention(q, k, v, actual_seq_lengths=LENGTHS, **kw)
    for f in (kvflash.npu_incre_flash_attention, torch_npu.npu_incre_flash_attention):
        assert _same(f(q, k, v, actual_seq_lengths=lengths, **kw), want)
    out, lse = kvflash.incre_flash_attention(q, k, v, actual_seq_lengths=lengths,
                                             return_softmax_lse=True, **kw)
    want_out, want_lse = kvflash.incre_flash_attention(q, k, v, actual_seq_lengths=LENGTHS,
                                                       return_softmax_lse=True, **kw)
    assert _same(out, want_out) and _same(lse, want_lse)


def test_a_non_contiguous_tensor_is_read_by_value():
    q, k, v, kw = _case()
    lengths = torch.tensor([[LENGTHS[0], 0], [LENGTHS[1], 0]])[:, 0]  # stride 2
    want = kvflash.npu_incre_flash_attention(q, k, v, actual_seq_lengths=LENGTHS, **kw)
    assert _same(kvflash.npu_incre_flash_attention(q, k, v, actual_seq_lengths=lengths, **kw), want)


def test_tensor_lengths_follow_the_list_rules():
    """The same checks as a list: a too-long length is the library's ValueError."""
    q, k, v, kw = _case()
    with pytest.raises(ValueError, match="actual_seq_lengths"):
        kvflash.npu_incre_flash_attention(q, k, v, actual_seq_lengths=torch.tensor([9, 999]), **kw)


BAD = [
    ("2d", torch.tensor([LENGTHS]), "2-D int64 tensor"),
    ("0d", torch.tensor(9), "0-D int64 tensor"),
    ("float", torch.tensor([9.0, 4.0]), "1-D float32 tensor"),
    ("bool", torch.tensor([True, True]), "1-D bool tensor"),
    ("meta", torch.empty(2, dtype=torch.int64, device="meta"), "on meta"),
    ("int", 9, "got int"),
    ("str", "9,4", "got str"),
]


@pytest.mark.parametrize("bad,words", [(b, w) for _, b, w in BAD], ids=[i for i, _, _ in BAD])
@pytest.mark.parametrize("which", ["npu", "torch_npu", "ext"])
def test_other_values_are_a_value_error_naming_the_argument(which, bad, words):
    q, k, v, kw = _case()
    f = {"npu": kvflash.npu_incre_flash_attention, "torch_npu": torch_npu.npu_incre_flash_attention,
         "ext": kvflash.incre_flash_attention}[which]
    with pytest.raises(ValueError) as e:
        f(q, k, v, actual_seq_lengths=bad, **kw)
    msg = str(e.value)
    assert "actual_seq_lengths must be a list of ints or a 1-D integer CPU tensor" in msg, msg
    assert words in msg, msg


def test_lists_and_none_pass_through():
    q, k, v, kw = _case()
    want = torch.ops.kvflash.npu_incre_flash_attention(q, k, v, actual_seq_lengths=LENGTHS, **kw)
    assert _same(kvflash.npu_incre_flash_attention(q, k, v, actual_seq_lengths=tuple(LENGTHS),
                                                   **kw), want)
    full = torch.ops.kvflash.npu_incre_flash_attention(q, k, v, **kw)
    assert _same(kvflash.npu_incre_flash_attention(q, k, v, actual_seq_lengths=None, **kw), full)



# ---- length tensors (SFA, the lightning indexer): int32 or int64, one rule for every operator ----

def _lengths_as(kw, dtype):
    return {k: (v.to(dtype) if k.startswith("actual_seq_lengths") and v is not None else v)
            for k, v in kw.items()}


@pytest.mark.parametrize("layouts", [("TND", "PA_BSND"), ("BSND", "BSND"), ("TND", "TND")],
                         ids=lambda x: "-".join(x))
def test_indexer_takes_int64_length_tensors(layouts):
    q, k, w, kw = build_li(layout_q=layouts[0], layout_k=layouts[1], return_value=True)
    want = torch.ops.kvflash.npu_lightning_indexer(q, k, w, **kw)
    for dtype in (torch.int64, torch.int32):
        got = torch.ops.kvflash.npu_lightning_indexer(q, k, w, **_lengths_as(kw, dtype))
        assert all(_same(a, b) for a, b in zip(got, want))
    with pytest.raises(ValueError, match="actual_seq_lengths_query dtype must be int32 or int64"):
        torch.ops.kvflash.npu_lightning_indexer(q, k, w, **_lengths_as(kw, torch.uint8))


@pytest.mark.parametrize("layouts", [("TND", "PA_BSND"), ("BSND", "BSND")],
                         ids=lambda x: "-".join(x))
def test_sparse_attention_takes_int64_length_tensors(layouts):
    args, kw = build_sfa(SfaSpec("len64", layout_q=layouts[0], layout_kv=layouts[1], heads=4,
                                 topk=16, lse=True))
    want = torch.ops.kvflash.npu_sparse_flash_attention(*args, **kw)
    got = torch.ops.kvflash.npu_sparse_flash_attention(*args, **_lengths_as(kw, torch.int64))
    assert all(_same(a, b) for a, b in zip(got, want))


def test_an_int64_length_no_int32_holds_is_out_of_range():
    q, k, w, kw = build_li(layout_q="BSND", layout_k="BSND")
    kw = _lengths_as(kw, torch.int64)
    kw["actual_seq_lengths_key"][1] = (1 << 32) + 40  # 40 as int32: would pass if truncated
    with pytest.raises(ValueError, match=r"actual_seq_lengths_key\[1\] \(4294967336\)"):
        torch.ops.kvflash.npu_lightning_indexer(q, k, w, **kw)
