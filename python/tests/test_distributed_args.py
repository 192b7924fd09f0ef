"""kvflash.distributed's argument handling (issue 19), in this process: the arguments the sharding
arithmetic reads are checked before anything else (no process group is needed to see the
ValueError naming the argument), and host length lists may be 1-D integer tensors (checked on a
one-rank gloo group against the single-process op)."""
import pytest
import torch
import torch.distributed as dist

import kvflash
import kvflash.distributed as kd
from support import IfaSpec, SfaSpec, build_ifa, build_sfa, same_bits


def _paged_ifa():
    q, k, v, kw = build_ifa(IfaSpec("cp", layout="BSH", heads=4, kv_heads=2, kvn_attr=2,
                                    lens=(40, 9), batch=2, paged=True, block_size=16))
    return q, k, v, kw


def _ifa_cp(q, k, v, kw, **over):
    return kd.context_parallel_incre_flash_attention(q, k, v, **dict(kw, **over))


IFA_BAD = [
    ("block_size_missing", dict(block_size=0), "block_size (0) must be in [1, 512] with block_table"),
    ("block_size_negative", dict(block_size=-16), "block_size (-16) must be in [1, 512]"),
    ("block_size_big", dict(block_size=1024), "block_size (1024) must be in [1, 512]"),
    ("num_heads_zero", dict(num_heads=0), "num_heads (0) must be a positive int"),
    ("layout", dict(input_layout="BHSD"), "input_layout must be BSH, BSND or BNSD"),
    ("lengths_missing", dict(actual_seq_lengths=None), "needs actual_seq_lengths"),
    ("table_missing", dict(block_table=None), "needs block_table"),
    ("lengths_2d", dict(actual_seq_lengths=torch.tensor([[40, 9]])), "actual_seq_lengths must be"),
    ("lengths_float", dict(actual_seq_lengths=[40.0, 9.0]), "actual_seq_lengths must hold ints"),
    ("sharding", dict(sharding="round robin"), "sharding must be ContiguousShards or"),
    ("contiguous_with_table", dict(sharding=kd.ContiguousShards([0, 48])),
     "ContiguousShards describes a non-paged cache"),
]


@pytest.mark.parametrize("over,words", [(o, w) for _, o, w in IFA_BAD], ids=[i for i, _, _ in IFA_BAD])
def test_ifa_arguments_are_checked_first(over, words):
    assert not dist.is_initialized()  # the check comes before any use of the process group
    q, k, v, kw = _paged_ifa()
    kw = dict(kw, sharding=kd.RoundRobinBlocks())
    with pytest.raises(ValueError) as e:
        _ifa_cp(q, k, v, kw, **over)
    assert "[context_parallel_incre_flash_attention]" in str(e.value)
    assert words in str(e.value), str(e.value)


def _paged_sfa():
    args, kw = build_sfa(SfaSpec("cp", layout_kv="PA_BSND", block_size=16))
    return args, kw


SFA_BAD = [
    ("key_block_zero", lambda a, kw: (a[:1] + (a[1][:, :0], a[2][:, :0]) + a[3:], kw),
     "key block_size (dim 1 = 0) must be a multiple of 16 in [16, 1024]"),
    ("sparse_block_zero", lambda a, kw: (a, dict(kw, sparse_block_size=0)),
     "sparse_block_size (0) must be a power of two in [1, 128]"),
    ("sparse_block_three", lambda a, kw: (a, dict(kw, sparse_block_size=3)),
     "sparse_block_size (3) must be a power of two"),
    ("layout_kv", lambda a, kw: (a, dict(kw, layout_kv="BSND")), "needs layout_kv PA_BSND"),
    ("lengths_missing", lambda a, kw: (a, dict(kw, actual_seq_lengths_kv=None)),
     "needs actual_seq_lengths_kv"),
    ("table_missing", lambda a, kw: (a, dict(kw, block_table=None)), "needs block_table"),
    ("layout_query", lambda a, kw: (a, dict(kw, layout_query="SBND")),
     "layout_query must be BSND or TND"),
    ("tnd_without_lengths", lambda a, kw: ((a[0][:, 0],) + a[1:3] + (a[3][:, 0],) + a[4:],
                                           dict(kw, layout_query="TND", query_rope=None,
                                                actual_seq_lengths_query=None)),
     "actual_seq_lengths_query is required with layout_query TND"),
    ("query_rank", lambda a, kw: ((a[0][0],) + a[1:], kw), "query must be 4-D"),
]


@pytest.mark.parametrize("edit,words", [(e, w) for _, e, w in SFA_BAD], ids=[i for i, _, _ in SFA_BAD])
def test_sfa_arguments_are_checked_first(edit, words):
    assert not dist.is_initialized()
    args, kw = _paged_sfa()
    args, kw = edit(args, kw)
    with pytest.raises(ValueError) as e:
        kd.context_parallel_sparse_flash_attention(*args, sharding=kd.RoundRobinBlocks(), **kw)
    assert "[context_parallel_sparse_flash_attention]" in str(e.value)
    assert words in str(e.value), str(e.value)


@pytest.mark.parametrize("bounds,words", [
    (torch.tensor([[0, 4]]), "bounds must be a list of ints or a 1-D integer CPU tensor"),
    (torch.tensor([0.0, 4.0]), "bounds must be a list of ints or a 1-D integer CPU tensor"),
    ([0, 4.5], "bounds must hold ints"),
    (None, "bounds must be a list of ints"),
], ids=["2d", "float_tensor", "float", "none"])
def test_contiguous_shards_bounds(bounds, words):
    with pytest.raises(ValueError, match=r"\[ContiguousShards\] " + words.replace("[", r"\[")):
        kd.ContiguousShards(bounds)


def test_contiguous_shards_takes_a_tensor():
    assert kd.ContiguousShards(torch.tensor([0, 3, 8])).bounds == (0, 3, 8)
    assert kd.ContiguousShards(torch.tensor([0, 8], dtype=torch.int32)) == kd.ContiguousShards([0, 8])


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
def test_ifa_tensor_lengths_on_one_rank(one_rank, dtype):
    q, k, v, kw = build_ifa(IfaSpec("cp1", layout="BSH", heads=4, kv_heads=2, kvn_attr=2,
                                    lens=(40, 9), batch=2, slack=0))
    lens = list(kw.pop("actual_seq_lengths"))
    s = k.shape[1]
    want = kd.context_parallel_incre_flash_attention(
        q, k, v, sharding=kd.ContiguousShards([0, s]), actual_seq_lengths=lens,
        return_softmax_lse=True, **kw)
    got = kd.context_parallel_incre_flash_attention(
        q, k, v, sharding=kd.ContiguousShards(torch.tensor([0, s], dtype=dtype)),
        actual_seq_lengths=torch.tensor(lens, dtype=dtype), return_softmax_lse=True, **kw)
    for a, b in zip(got, want):
        assert same_bits(a, b)
    single = kvflash.incre_flash_attention(q, k, v, actual_seq_lengths=lens,
                                           return_softmax_lse=True, **kw)
    assert (got[0].float() - single[0].float()).abs().max() <= 2.0 ** -9


def test_ifa_round_robin_tensor_lengths_on_one_rank(one_rank):
    q, k, v, kw = _paged_ifa()
    lens = list(kw.pop("actual_seq_lengths"))
    want = kd.context_parallel_incre_flash_attention(
        q, k, v, sharding=kd.RoundRobinBlocks(), actual_seq_lengths=lens, **kw)
    got = kd.context_parallel_incre_flash_attention(
        q, k, v, sharding=kd.RoundRobinBlocks(), actual_seq_lengths=torch.tensor(lens), **kw)
    assert same_bits(got[0], want[0])
