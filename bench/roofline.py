"""The roofline of a benchmark row from a run's ceilings, for the scripts that re-judge rows against
ceilings measured apart from them: bench/peers.py (the mean of the probes at the start and the end
of a sweep, while each problem runs with --no-bandwidth) and bench/report.py (runs recorded before
rows carried their roofline). The rule is tools/roofline.hpp's (compute_ceiling, roofline), which
`kvflash bench --json` applies itself; tests/cli.cmake (cli_bench_roofline_agrees) checks that the
two give the same figures for the same row. Standard library only.
"""


def ceiling(kv_dtype, on_tiles, peaks):
    """(engine, GFLOP/s) a row of kv_dtype is held to (docs/perf.md, "Roofline"): on the tiles the
    AMX tdpbf16ps peak (half of it for fp16: two bf16 pieces a product), else the faster of
    vdpbf16ps (half for fp16) and the fp32 FMA; ("", 0) when nothing was measured."""
    fp16 = kv_dtype == "fp16"
    amx = peaks.get("amx_peak_gflops", 0.0)
    if on_tiles and amx > 0:
        return ("amx/2", amx / 2) if fp16 else ("amx", amx)
    dot = peaks.get("bf16_peak_gflops", 0.0) / (2 if fp16 else 1)
    fma = peaks.get("fma_peak_gflops", 0.0)
    if dot <= 0 and fma <= 0:
        return "", 0.0
    if dot > fma:
        return ("vdpbf16ps/2" if fp16 else "vdpbf16ps"), dot
    return "fma", fma


def roofline(flops, nbytes, measured_ms, bw_gbs, engine, ceiling_gflops):
    """The row's roofline fields (as `kvflash bench --json` names them), or None without a
    bandwidth: roofline_ms = max(bytes / bw, flops / ceiling), its bound, the fraction."""
    if bw_gbs <= 0 or measured_ms <= 0:
        return None
    memory_ms = nbytes / bw_gbs / 1e6
    compute_ms = flops / ceiling_gflops / 1e6 if ceiling_gflops > 0 else 0.0
    ms = max(memory_ms, compute_ms)
    return {"intensity": flops / nbytes if nbytes > 0 else 0.0,
            "ceiling_engine": engine, "ceiling_gflops": ceiling_gflops, "roofline_ms": ms,
            "bound": engine if compute_ms > memory_ms else "memory",
            "roofline_fraction": ms / measured_ms}


def judge(row, run):
    """Fills row's roofline fields from the run's ceilings (read_bandwidth_gbs, bf16 / fma / amx
    peaks). Needs the row's flops and on_tiles (rows of `kvflash bench` since the roofline);
    returns False, leaving the row alone, for an older row without them."""
    if "flops" not in row or "on_tiles" not in row:
        return False
    engine, peak = ceiling(row["kv_dtype"], row["on_tiles"], run) if row["flops"] > 0 else ("", 0.0)
    fields = roofline(row["flops"], row["bytes"], row["ms_per_call"], run["read_bandwidth_gbs"],
                      engine, peak)
    if fields is None:
        return False
    row.update(fields)
    row["peak_fraction"] = row["gflops"] / peak if peak > 0 else 0.0
    return True


def fields(row, run):
    """The row's roofline as report.py shows it: the row's own fields when it carries them (`kvflash
    bench` with the ceilings, or bench/peers.py), else derived from an older row of the same run
    (flops = GFLOP/s x time; its ceiling = GFLOP/s / peak_fraction, the one it was judged
    against; engine "compute") with derived=True; None without a bandwidth."""
    if row.get("bound"):
        return {k: row[k] for k in ("intensity", "ceiling_engine", "ceiling_gflops",
                                    "roofline_ms", "bound", "roofline_fraction")} | \
            {"derived": False}
    flops = row.get("gflops", 0.0) * row["ms_per_call"] * 1e6
    peak = row["gflops"] / row["peak_fraction"] if row.get("peak_fraction", 0) > 0 else 0.0
    out = roofline(flops, row["bytes"], row["ms_per_call"], run.get("read_bandwidth_gbs", 0.0),
                   "compute" if peak > 0 else "", peak)
    return None if out is None else out | {"derived": True}
