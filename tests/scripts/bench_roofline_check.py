#!/usr/bin/env python3
"""Checks of the benchmark rows' roofline on the Python side (tests/cli.cmake runs them):

    bench_roofline_check.py formulas           bench/roofline.py on cases worked out by hand
    bench_roofline_check.py agrees RUN.json    a `kvflash bench --json` run with its ceilings: every
                                               row has the roofline fields, and bench/roofline.py
                                               recomputes the same figures from the row and the run
                                               (tools/roofline.hpp and bench/roofline.py agree)
    bench_roofline_check.py capi RUN.json      a `kvflash bench --capi` run: the C API fields
"""
import copy
import json
import math
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench"))
import roofline  # noqa: E402

FIELDS = ("flops", "bytes", "intensity", "on_tiles", "ceiling_engine", "ceiling_gflops",
          "roofline_ms", "bound", "roofline_fraction")


def close(a, b, rel, abs_tol):
    return math.isclose(a, b, rel_tol=rel, abs_tol=abs_tol)


def formulas():
    amx = {"bf16_peak_gflops": 240.0, "fma_peak_gflops": 470.0, "amx_peak_gflops": 7200.0}
    assert roofline.ceiling("bf16", True, amx) == ("amx", 7200.0)
    assert roofline.ceiling("int8", True, amx) == ("amx", 7200.0)
    assert roofline.ceiling("fp16", True, amx) == ("amx/2", 3600.0)
    assert roofline.ceiling("bf16", False, amx) == ("fma", 470.0)
    zen = {"bf16_peak_gflops": 1000.0, "fma_peak_gflops": 400.0, "amx_peak_gflops": 0.0}
    assert roofline.ceiling("bf16", True, zen) == ("vdpbf16ps", 1000.0)
    assert roofline.ceiling("fp16", False, zen) == ("vdpbf16ps/2", 500.0)
    assert roofline.ceiling("bf16", False, {}) == ("", 0.0)
    # 1e9 bytes, 4e9 FLOPs at 32 GB/s and 470 GFLOP/s, measured 50 ms: memory 31.25 ms, 0.625.
    r = roofline.roofline(4e9, 1e9, 50.0, 32.0, "fma", 470.0)
    assert r["bound"] == "memory" and r["roofline_ms"] == 31.25 and r["roofline_fraction"] == 0.625
    assert r["intensity"] == 4.0
    # 4.7e11 FLOPs, 1e7 bytes, measured 2000 ms: compute 1000 ms at 470 GFLOP/s, 0.5, fma-bound.
    r = roofline.roofline(4.7e11, 1e7, 2000.0, 32.0, "fma", 470.0)
    assert r["bound"] == "fma" and r["roofline_ms"] == 1000.0 and r["roofline_fraction"] == 0.5
    assert roofline.roofline(1, 1, 1.0, 0.0, "amx", 7200.0) is None
    # An older row (no flops / on_tiles): derived from GFLOP/s, time and peak_fraction.
    old = {"gflops": 100.0, "ms_per_call": 2.0, "bytes": 1e8, "peak_fraction": 0.25}
    f = roofline.fields(old, {"read_bandwidth_gbs": 50.0})
    # flops 2e8; ceiling 400 GFLOP/s: compute 0.5 ms; memory 1e8 / 50e9 = 2 ms: memory-bound, 1.0.
    assert f["derived"] and f["bound"] == "memory" and f["roofline_fraction"] == 1.0, f
    assert f["ceiling_gflops"] == 400.0 and f["ceiling_engine"] == "compute"
    print("bench/roofline.py: formulas as worked out by hand")


def agrees(path):
    run = json.load(open(path))
    assert run["read_bandwidth_gbs"] > 0, "the run must measure its ceilings (no --no-bandwidth)"
    ops = set()
    for row in run["results"]:
        missing = [k for k in FIELDS if k not in row]
        assert not missing, (row["problem"], missing)
        ops.add(row["op"])
        assert row["bound"] in ("memory", row["ceiling_engine"]), row
        assert row["roofline_ms"] > 0 and row["roofline_fraction"] > 0, row
        if row["op"] == "kvcache":
            assert row["flops"] == 0 and row["bound"] == "memory" and row["ceiling_engine"] == ""
            # The plain copy it is timed against, alternated in the same run.
            assert row["copy_ms_per_call"] > 0, row
            assert close(row["copy_ratio"], row["copy_ms_per_call"] / row["ms_per_call"], 1e-3,
                         1e-3), row
        else:
            assert row["copy_ms_per_call"] == 0 and row["copy_ratio"] == 0, row
            assert row["flops"] > 0 and row["ceiling_gflops"] > 0, row
            assert close(row["intensity"], row["flops"] / row["bytes"], 1e-5, 0), row
        mine = copy.deepcopy(row)
        assert roofline.judge(mine, run), row["problem"]
        for k in ("ceiling_engine", "bound"):
            assert mine[k] == row[k], (row["problem"], k, mine[k], row[k])
        # The JSON's rounding: times to 1e-6 ms, ceilings to 1e-6, fractions to 1e-4.
        for k, rel, abs_tol in (("ceiling_gflops", 1e-6, 2e-6), ("roofline_ms", 1e-4, 2e-6),
                                ("intensity", 1e-5, 0), ("roofline_fraction", 5e-3, 2e-4)):
            assert close(mine[k], row[k], rel, abs_tol), (row["problem"], k, mine[k], row[k])
    print(f"{path}: {len(run['results'])} rows ({', '.join(sorted(ops))}) carry their roofline, "
          f"and bench/roofline.py gives the same figures")


def capi(path):
    run = json.load(open(path))
    rows = {r["problem"]: r for r in run["results"]}
    timed = [r for r in rows.values() if r["capi_ratio"] > 0]
    assert timed, "no row timed the C API path"
    for r in timed:
        assert 0 < r["capi_ms_p10"] <= r["capi_ms_per_call"] <= r["capi_ms_p90"], r
        assert close(r["capi_ratio"], r["capi_ms_per_call"] / r["ms_per_call"], 1e-3, 1e-3), r
        assert r["capi_note"] == "", r
    for r in rows.values():
        if r["layout"] == "atb":
            assert r["capi_ratio"] == 0 and "blocks_may_repeat" in r["capi_note"], r
    print(f"{path}: {len(timed)} rows timed through the C API")


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "formulas":
        formulas()
    elif what == "agrees":
        agrees(sys.argv[2])
    elif what == "capi":
        capi(sys.argv[2])
    else:
        sys.exit(f"unknown check {what}")
