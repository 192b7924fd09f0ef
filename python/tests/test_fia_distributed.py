"""kvflash.distributed's context-parallel FIA decode (LSE merge) on 2 spawned gloo ranks: every
case equals the single-process FIA within docs/distributed.md's tolerance, every rank returns the
same bits, a repeat gives the same bits."""

import pytest
import torch

import fia_distributed_cases as fdc
import spawn_world

WORLD = 2
DEADLINE_S = 120
UNIT = {torch.float16: 2.0 ** -11, torch.bfloat16: 2.0 ** -8}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out_dir = str(tmp_path_factory.mktemp("fia_cp"))
    return spawn_world.run_world(fdc.worker, WORLD, out_dir, DEADLINE_S)


CASES = [spec.name for spec, _ in fdc.cases()]


@pytest.mark.parametrize("case", CASES)
def test_matches_single_process_and_ranks_agree(results, case):
    single_out, single_lse = results[0][case]["single"]
    out, lse = results[0][case]["dist"]
    for r in range(WORLD):
        for a, b in zip(results[r][case]["dist"] + results[r][case]["repeat"],
                        results[0][case]["dist"] * 2):
            assert torch.equal(a.view(torch.uint8) if a.numel() else a,
                               b.view(torch.uint8) if b.numel() else b), f"rank {r} differs"
    assert out.shape == single_out.shape and lse.shape == single_lse.shape
    w = single_out.double()
    d = w.shape[-1]
    rowmax = w.abs().reshape(-1, d).amax(dim=1, keepdim=True).reshape(*w.shape[:-1], 1)
    bound = 4 * UNIT[single_out.dtype] * (w.abs() + rowmax)
    err = (out.double() - w).abs()
    worst = float((err / bound.clamp(min=1e-30)).max())
    assert bool((err <= bound).all()), f"{case}: worst error {worst} x the bound"
    fin = torch.isfinite(single_lse)
    assert torch.equal(fin, torch.isfinite(lse)) and torch.equal(lse[~fin], single_lse[~fin])
    x = single_lse[fin].double()
    assert bool(((lse[fin].double() - x).abs() <= 2.0 ** -16 * (1 + x.abs())).all())
