"""kvflash.distributed.context_parallel_lightning_indexer's argument handling, in this process:
what the row and sharding arithmetic reads is checked before any use of the process group (a
ValueError naming the argument), and on a one-rank gloo group the function is the single-process
npu_lightning_indexer bit for bit (lengths as tensors or lists)."""
import pytest
import torch
import torch.distributed as dist

import kvflash
import kvflash.distributed as kd
from support import build_li, same_bits

OP = "[context_parallel_lightning_indexer]"


def _paged():
    q, k, w, kw = build_li("TND", "PA_BSND", return_value=True)
    return q, k, w, dict(kw, sharding=kd.RoundRobinBlocks())


def _contiguous():
    q, k, w, kw = build_li("BSND", "BSND", return_value=True)
    return q, k, w, dict(kw, sharding=kd.ContiguousShards([0, k.shape[1]]))


def _edit(**over):
    return lambda q, k, w, kw: (q, k, w, dict(kw, **over))


BAD = [
    ("sharding", _paged, _edit(sharding="blocks"), "sharding must be ContiguousShards or"),
    ("layout_query", _paged, _edit(layout_query="BNSD"), "layout_query must be BSND or TND"),
    ("layout_type", _paged, _edit(layout_key=3), "layout_key must be a str"),
    ("query_rank", _paged, _edit(layout_query="BSND"), "query must be 4-D for layout_query BSND"),
    ("key_dtype", _paged, lambda q, k, w, kw: (q, k.half(), w, kw),
     "key dtype (torch.float16) must be the query's"),
    ("weights_shape", _paged, lambda q, k, w, kw: (q, k, w[:, :3], kw), "weights (4, 3) must be"),
    ("sparse_mode", _paged, _edit(sparse_mode=1), "sparse_mode must be 0 or 3"),
    ("sparse_mode_type", _paged, _edit(sparse_mode=True), "sparse_mode must be a int"),
    ("sparse_count", _paged, _edit(sparse_count=0), "sparse_count must be an int in [1, 8192]"),
    ("return_value", _paged, _edit(return_value=1), "return_value must be a bool"),
    ("tnd_lengths", _paged, _edit(actual_seq_lengths_query=None),
     "actual_seq_lengths_query must be non-empty, non-decreasing prefix sums"),
    ("tnd_lengths_order", _paged, _edit(actual_seq_lengths_query=torch.tensor([3, 1])),
     "non-decreasing prefix sums from >= 0 up to T (4)"),
    ("layout_key", _paged, _edit(layout_key="BSND"), "needs layout_key PA_BSND"),
    ("table_missing", _paged, _edit(block_table=None), "needs block_table"),
    ("key_lengths_missing", _paged, _edit(actual_seq_lengths_key=None),
     "needs actual_seq_lengths_key"),
    ("table_rows", _paged,
     lambda q, k, w, kw: (q, k, w, dict(kw, block_table=kw["block_table"][:1])),
     "block_table must have B (2, the entries of actual_seq_lengths_query) rows"),
    ("key_block_size", _paged, lambda q, k, w, kw: (q, k[:, :8], w, kw),
     "key block_size (dim 1 = 8) must be a multiple of 16"),
    ("key_lengths_range", _paged, _edit(actual_seq_lengths_key=[40, 1000]),
     "actual_seq_lengths_key must hold B (2, the entries of actual_seq_lengths_query) lengths in "
     "[0, 96]"),
    ("contiguous_layout", _contiguous, _edit(layout_key="PA_BSND"),
     "ContiguousShards needs layout_key and layout_query BSND"),
    ("contiguous_table", _contiguous, _edit(block_table=torch.zeros(2, 1, dtype=torch.int32)),
     "ContiguousShards describes a non-paged cache"),
    ("bsnd_lengths", _contiguous, _edit(actual_seq_lengths_query=[1, 9]),
     "actual_seq_lengths_query must hold B (2) lengths in [0, S1 = 3]"),
]


@pytest.mark.parametrize("make,edit,words", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_arguments_are_checked_first(make, edit, words):
    assert not dist.is_initialized()  # the check comes before any use of the process group
    q, k, w, kw = edit(*make())
    with pytest.raises(ValueError) as e:
        kd.context_parallel_lightning_indexer(q, k, w, **kw)
    assert OP in str(e.value), str(e.value)
    assert words in str(e.value), str(e.value)


@pytest.mark.parametrize("make", [_paged, _contiguous], ids=["paged", "contiguous"])
@pytest.mark.parametrize("as_list", [False, True], ids=["tensors", "lists"])
def test_one_rank_is_the_single_process_op(one_rank, make, as_list):
    q, k, w, kw = make()
    sharding = kw.pop("sharding")
    want = kvflash.npu_lightning_indexer(q, k, w, **kw)
    if as_list:
        for name in ("actual_seq_lengths_query", "actual_seq_lengths_key"):
            kw[name] = kw[name].tolist()
    got = kd.context_parallel_lightning_indexer(q, k, w, sharding=sharding, **kw)
    for a, b in zip(got, want):
        assert same_bits(a, b)


def test_bounds_are_checked_against_the_shard(one_rank):
    q, k, w, kw = _contiguous()
    kw["sharding"] = kd.ContiguousShards([0, k.shape[1] + 1])
    with pytest.raises(ValueError, match="but its key has"):
        kd.context_parallel_lightning_indexer(q, k, w, **kw)
