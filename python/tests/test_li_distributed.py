"""kvflash.distributed's sharded lightning indexer on spawned gloo processes over loopback, 2 and
3 ranks (one process group per world size runs every case, li_distributed_cases.py): every rank
returns the single-process npu_lightning_indexer's sparse_indices and sparse_values bit for bit,
the same bits on a repeat; the DSA step through the sharded indexer and
context_parallel_sparse_flash_attention uses the single-process indices and matches the
single-process step within docs/distributed.md's tolerance; a local failure on one rank makes
every rank raise."""

import pytest
import torch

import li_distributed_cases as lc
import spawn_world
from support import same_bits

WORLDS = (2, 3)
DEADLINE_S = 120
UNIT = {torch.float16: 2.0 ** -11, torch.bfloat16: 2.0 ** -8}


@pytest.fixture(scope="module", params=WORLDS, ids=lambda w: f"world{w}")
def world_results(request, tmp_path_factory):
    world = request.param
    out_dir = str(tmp_path_factory.mktemp(f"li_cp{world}"))
    res = spawn_world.run_world(lc.worker, world, out_dir, DEADLINE_S)
    return world, res


@pytest.mark.parametrize("case", [c.name for c in lc.cases()])
def test_every_rank_equals_the_single_process_op(world_results, case):
    world, res = world_results
    c = next(x for x in lc.cases() if x.name == case)
    indices, values = res[0][case]["single"]
    assert int((indices >= 0).sum()) > 0, "the case selects nothing"
    for r in range(world):
        got = res[r][case]
        for run in ("dist", "repeat"):
            d_idx, d_val = got[run]
            if not same_bits(d_idx, indices):
                rows = (d_idx != indices).reshape(-1, c.sparse_count).any(1).nonzero().flatten()
                raise AssertionError(f"rank {r} {run}: sparse_indices differ in rows "
                                     f"{rows.tolist()[:8]}")
            assert same_bits(d_val, values), f"rank {r} {run}: sparse_values differ"
        n_idx, n_val = got["no_values"]
        assert same_bits(n_idx, indices)
        assert n_val.shape == (0,) and n_val.dtype == values.dtype


def test_the_cases_cover_ties_nan_and_empty_rows():
    """What the cases are for is in them: ties at equal scores, NaN scores selected, rows with
    fewer valid keys than sparse_count and rows with none."""
    import kvflash
    seen = set()
    for c in lc.cases():
        q, k, w, kw = lc.build(c)
        kw.pop("return_value")
        idx, scores = kvflash.lightning_indexer_scores(q, k, w, **kw)
        idx, scores = idx.reshape(-1, c.sparse_count), scores.reshape(-1, c.sparse_count)
        live = idx >= 0
        if bool(((scores[:, 1:] == scores[:, :-1]) & live[:, 1:]).any()):
            seen.add("ties")
        if bool((torch.isnan(scores) & live).any()):
            seen.add("nan")
        counts = live.sum(1)
        if bool(((counts > 0) & (counts < c.sparse_count)).any()):
            seen.add("short")
        if bool((counts == 0).any()):
            seen.add("empty")
    assert seen == {"ties", "nan", "short", "empty"}, seen


@pytest.mark.parametrize("case", [name for name, _, _ in lc.dsa_cases()])
def test_the_sharded_dsa_step_equals_the_single_process_step(world_results, case):
    world, res = world_results
    x0 = res[0][case]
    assert int((x0["single_idx"] >= 0).sum()) > 0
    single_out, single_max, single_sum = x0["single"]
    for r in range(world):
        x = res[r][case]
        assert same_bits(x["dist_idx"], x0["single_idx"]), f"rank {r}: indices differ"
        for a, b in zip(x["dist"], x0["dist"]):
            assert same_bits(a, b), f"rank {r} differs from rank 0"
    out, mx, sm = x0["dist"]
    w = single_out.double()
    d = w.shape[-1]
    rowmax = w.abs().reshape(-1, d).amax(dim=1, keepdim=True).reshape(*w.shape[:-1], 1)
    bound = 4 * UNIT[single_out.dtype] * (w.abs() + rowmax) + 1e-30
    err = (out.double() - w).abs()
    worst = float((err / bound).max())
    print(f"worst {case} world {world}: out {float(err.max()):.3g}, {worst:.3f} x bound")
    assert worst <= 1.0, f"{case}: worst error {worst} x the bound"
    for got, want in ((mx, single_max), (sm, single_sum)):
        x = want.double()
        assert bool(((got.double() - x).abs() <= 2.0 ** -16 * (1 + x.abs())).all())


def test_a_local_failure_raises_on_every_rank(world_results):
    world, res = world_results
    last = res[world - 1]["failure"]
    assert last["type"] == "ValueError" and "block_table" in last["message"], last
    for r in range(world - 1):
        f = res[r]["failure"]
        assert f["type"] == "ValueError", f
        assert f"failed on rank {world - 1}" in f["message"], f
