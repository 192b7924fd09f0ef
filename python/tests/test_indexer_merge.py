"""kvflash.distributed.merge_indexer_topk: a sharded lightning indexer's per-rank selections merge
into exactly what one indexer over the whole key sequence selects (docs/lightning_indexer.md,
"Context parallel: the exact top-k merge"): indices and fp32 score bits, NaN first, +0 == -0,
ties by the lower index, -1 / -inf padding; contiguous and round-robin block shards."""
import zlib

import pytest
import torch

from kvflash.distributed import merge_indexer_topk


def _order_key(x):
    """The selection order of one fp32 score as a Python int (larger ranks first)."""
    u = int(torch.tensor([x], dtype=torch.float32).view(torch.int32).item()) & 0xFFFFFFFF
    if (u & 0x7FFFFFFF) > 0x7F800000:
        return 1 << 32
    if u == 0x80000000:
        u = 0
    return (~u & 0xFFFFFFFF) if u & 0x80000000 else (u | 0x80000000)


def _selection(scores, keys, k):
    """The indexer's selection of `keys` (global positions) by `scores`: a full stable sort."""
    order = sorted(keys, key=lambda j: (-_order_key(scores[j]), j))
    return order[:k]


def _scores(n, gen, kind):
    s = torch.randn(n, generator=gen) * 10
    if kind == "ties":  # a few distinct values: equal scores straddle every boundary
        s = torch.randint(-3, 4, (n,), generator=gen).float()
        s[torch.randint(0, n, (max(n // 10, 1),), generator=gen)] = -0.0
    elif kind == "nonfinite":
        pick = torch.randint(0, n, (max(n // 8, 1),), generator=gen)
        s[pick[0::3]] = float("nan")
        s[pick[1::3]] = float("inf")
        s[pick[2::3]] = float("-inf")
        s[0] = -float("nan")
    return s.tolist()


def _owner(sharding, world, n, block):
    if sharding == "contiguous":
        step = -(-n // world)
        return lambda j: min(j // step, world - 1)
    return lambda j: (j // block) % world


@pytest.mark.parametrize("kind", ["random", "ties", "nonfinite"])
@pytest.mark.parametrize("sharding,world,block", [("contiguous", 2, 0), ("contiguous", 3, 0),
                                                  ("round_robin", 2, 16), ("round_robin", 4, 128),
                                                  ("round_robin", 3, 1)])
@pytest.mark.parametrize("k", [1, 7, 64, 300])
def test_shards_merge_to_the_single_indexer(kind, sharding, world, block, k):
    seed = zlib.crc32(repr((kind, sharding, world, block, k)).encode())
    gen = torch.Generator().manual_seed(seed)
    lengths = [0, 5, 64, 250, 1000]  # rows with fewer, about as many and more keys than k
    owner = [_owner(sharding, world, n, block) for n in lengths]
    rows = len(lengths)
    row_scores = [_scores(max(n, 1), gen, kind) for n in lengths]
    kr = k  # each rank selects its own top k
    sc = torch.full((world, rows, kr), float("-inf"), dtype=torch.float32)
    ix = torch.full((world, rows, kr), -1, dtype=torch.int32)
    for r in range(rows):
        for rank in range(world):
            mine = [j for j in range(lengths[r]) if owner[r](j) == rank]
            sel = _selection(row_scores[r], mine, kr)
            for s, j in enumerate(sel):
                sc[rank, r, s] = row_scores[r][j]
                ix[rank, r, s] = j
    got_ix, got_sc = merge_indexer_topk(sc, ix, k)
    for r in range(rows):
        want = _selection(row_scores[r], list(range(lengths[r])), k)
        want_ix = want + [-1] * (k - len(want))
        assert got_ix[r].tolist() == want_ix, (r, lengths[r])
        want_sc = torch.tensor([row_scores[r][j] for j in want] + [float("-inf")] * (k - len(want)),
                               dtype=torch.float32)
        assert torch.equal(got_sc[r].view(torch.int32), want_sc.view(torch.int32)), r


def test_refuses_bad_lists():
    sc = torch.tensor([[[1.0, 2.0]]])
    ix = torch.tensor([[[0, 1]]], dtype=torch.int32)
    with pytest.raises(ValueError, match="selection order"):
        merge_indexer_topk(sc, ix, 2)
    sc = torch.tensor([[[3.0]], [[3.0]]])
    ix = torch.tensor([[[8]], [[8]]], dtype=torch.int32)
    with pytest.raises(ValueError, match="more than one rank"):
        merge_indexer_topk(sc, ix, 2)
    with pytest.raises(ValueError, match="float32"):
        merge_indexer_topk(sc.double(), ix, 2)
