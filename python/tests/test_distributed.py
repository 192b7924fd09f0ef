"""kvflash.distributed on spawned gloo processes over loopback, 2 and 4 ranks: every case equals
the single-process op within docs/distributed.md's tolerance, every rank returns the same bits,
and a repeat gives the same bits. One process group per world size runs all the cases
(distributed_cases.py); the processes are bounded by a deadline."""
import os

import pytest
import torch

import distributed_cases as dc
import spawn_world
from support import same_bits

WORLDS = (2, 4)
DEADLINE_S = 100
# docs/distributed.md: |cp - single| <= 4u (|single| + max|single| of the row) for the output
# (u = 2^-11 fp16, 2^-8 bf16: the partials are rounded once, the merged result once more, the
# single-process result once); the statistics in fp32 within 2^-16 (1 + |x|).
UNIT = {torch.float16: 2.0 ** -11, torch.bfloat16: 2.0 ** -8, torch.float32: 2.0 ** -24}
WORST = {}


@pytest.fixture(scope="module", params=WORLDS, ids=lambda w: f"world{w}")
def world_results(request, tmp_path_factory):
    world = request.param
    out_dir = str(tmp_path_factory.mktemp(f"cp{world}"))
    res = spawn_world.run_world(dc.worker, world, out_dir, DEADLINE_S)
    return world, res


CASES = [("ifa:" + s.name) for s, _ in dc.ifa_cases(2)] + [("sfa:" + s.name) for s, _ in dc.sfa_cases(2)]


@pytest.mark.parametrize("case", CASES)
def test_ranks_agree_and_repeat(world_results, case):
    world, res = world_results
    first = res[0][case]["dist"]
    for r in range(world):
        for a, b in zip(res[r][case]["dist"], first):
            assert same_bits(a, b), f"rank {r} differs from rank 0"
        for a, b in zip(res[r][case]["repeat"], res[r][case]["dist"]):
            assert same_bits(a, b), f"rank {r}: repeat differs"


def _check_close(name, got, want, bound):
    got, want = got.double(), want.double()
    fin = torch.isfinite(want)
    assert torch.equal(torch.isnan(got), torch.isnan(want)), f"{name}: NaN pattern differs"
    assert torch.equal(got[~fin & ~torch.isnan(want)], want[~fin & ~torch.isnan(want)]), \
        f"{name}: infinities differ"
    err = (got - want).abs()[fin]
    ratio = (err / bound[fin]).max().item() if err.numel() else 0.0
    if ratio > 1.0:
        i = int((err / bound[fin]).argmax())
        raise AssertionError(f"{name}: error {ratio:.3g} x the bound: got {got[fin][i].item()}, "
                             f"want {want[fin][i].item()}, bound {bound[fin][i].item():.3g}")
    return err.max().item() if err.numel() else 0.0, ratio


@pytest.mark.parametrize("case", CASES)
def test_matches_single_process(world_results, case):
    world, res = world_results
    single, got = res[0][case]["single"], res[0][case]["dist"]
    out_s, out_d = single[0], got[0]
    u = UNIT[out_s.dtype]
    w = out_s.double()
    d = w.shape[-1]
    rowmax = w.abs().nan_to_num(0).reshape(-1, d).amax(dim=1, keepdim=True).reshape(
        *w.shape[:-1], 1)
    err, ratio = _check_close(f"{case} out", out_d, out_s, 4 * u * (w.abs() + rowmax) + 1e-30)
    WORST[(world, case, "out")] = (err, ratio)
    for i in range(1, len(single)):
        if single[i].numel():
            x = single[i].double()
            e, r = _check_close(f"{case} stat{i}", got[i], single[i], 2.0 ** -16 * (1 + x.abs()))
            WORST[(world, case, f"stat{i}")] = (e, r)


def test_report_worst_error():
    """Prints the worst errors (pytest -s shows them); docs/distributed.md quotes them."""
    for k, (e, r) in sorted(WORST.items()):
        print(f"worst {k}: abs {e:.3g}, {r:.3f} x bound")


def test_torchrun_example_of_the_docs(tmp_path):
    """docs/distributed.md's two-process example runs under torchrun as written, and every rank
    matches the single-process op within a bf16 ulp."""
    import pathlib
    import re
    import subprocess
    import sys
    doc = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "distributed.md").read_text()
    code = next(b for b in re.findall(r"```python\n(.*?)```", doc, re.S)
                if b.startswith("# cp_example.py"))
    script = tmp_path / "cp_example.py"
    script.write_text(code)
    env = dict(os.environ, GLOO_SOCKET_IFNAME="lo", OMP_NUM_THREADS="1")
    r = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc-per-node=2",
                        "--master-addr=127.0.0.1", f"--master-port={spawn_world.free_port()}", str(script)],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    # Both ranks write to one pipe, and one rank's newline may land after the other's line: find
    # the ranks' reports wherever they are.
    num = r"([-+0-9.eE]+|nan|inf)"
    rows = re.findall(rf"rank (\d): max \|out error\| {num}, max \|lse error\| {num}", r.stdout)
    assert sorted(int(x[0]) for x in rows) == [0, 1], r.stdout
    for _, err, lse_err in rows:
        assert float(err) <= 2.0 ** -6 and float(lse_err) <= 1e-4, r.stdout
