#!/usr/bin/env python3
"""Turns a benchmark run (bench/peers.py --out, or `kvflash bench --json`) into the Markdown tables
of docs/perf-log.md and, when matplotlib is installed (pip install matplotlib; never needed by CI), a
PNG plot of GB/s against KV length per KV dtype with the run's measured read bandwidth as a line
and the peers' points, beside each row's fraction of its roofline.

    python3 bench/report.py run.json                 # tables on stdout
    python3 bench/report.py run.json --plot perf.png # and the plot

Every row is judged against its roofline (docs/perf.md, "Roofline"; bench/roofline.py): its FLOP
per byte, the bound (memory or the compute engine of its dtype) and the fraction of the roofline;
rows of older runs get theirs derived from their GFLOP/s, bytes and peak_fraction (the header says
so). Tables: IFA (ms/call, GB/s, fraction of the read bandwidth, roofline, C API / C++ time where
the run timed the C API path (kvflash bench --capi), each peer's ms/call, the isa it ran where it
reports one, and kvflash's speed-up over it), SFA (GFLOP/s and fraction of the compute ceiling,
gathered GB/s and fraction of the read bandwidth, roofline, the same peer columns), the indexer and
prefill rows, the cache writes, and the fixed per-call cost (problems of at most 64 tokens, in
microseconds). Headlines: the fraction of the roofline per KV dtype and GQA group. --csv writes the
same rows flat, one line a problem with every peer's ms/call, isa and speed-up. --beside puts other
runs of the same problems (another thread count) next to this one in one compact table instead: per
run the fraction of the roofline and its bound, and kvflash's speed-up over each peer, with the
peer's isa. The plot: GB/s against KV length beside the fraction of the roofline.

    python3 bench/report.py run.json --csv run.csv
    python3 bench/report.py run-2t.json --beside run-1t.json
"""
import argparse
import csv
import json
import sys

import roofline

PEER_NAMES = {"sdpa": "PyTorch SDPA", "vllm": "vLLM CPU attention",
              "sglang": "SGLang decode_attention_cpu", "pace": "PACE SlabPool decode",
              "pace_dense": "PACE grouped_query_attention"}
PEER_ORDER = ("sdpa", "vllm", "pace", "pace_dense", "sglang")
FIXED_COST_TOKENS = 64  # a problem this small measures the per-call cost, not bandwidth


def peer_names(run, op=None):
    """Peers that answered at least one problem (of op, when given), in a fixed order."""
    seen = {name for r in run["results"] if op is None or r.get("op", "ifa") == op
            for name, a in r.get("peers", {}).items() if "ms_per_call" in a}
    return [n for n in PEER_ORDER if n in seen] + sorted(seen - set(PEER_ORDER))


def peer_has_isa(run, name, op):
    return any("isa" in r.get("peers", {}).get(name, {}) for r in run["results"]
               if r.get("op", "ifa") == op)


def frac(x, ceiling):
    return f"{x / ceiling:.2f}" if ceiling > 0 else "-"


def roof(run, row):
    """The row's roofline fields (bench/roofline.py fields), or None."""
    return roofline.fields(row, run)


def roof_cells(run, row):
    """FLOP/B, bound, of roofline."""
    f = roof(run, row)
    if f is None:
        return ["-", "-", "-"]
    return [f"{f['intensity']:.3g}", f["bound"], f"{f['roofline_fraction']:.2f}"]


def has_capi(run, rows):
    return any(r.get("capi_ratio", 0) > 0 for r in rows)


def capi_cell(row):
    """C API / C++ time ratio of the row (kvflash bench --capi), or why there is none."""
    if row.get("capi_ratio", 0) > 0:
        return f"{row['capi_ratio']:.2f}"
    return "n/a" if row.get("capi_note") and "--capi" not in row["capi_note"] else "-"


def compute_peak(run):
    """The compute ceiling of a run (older runs measured only the bf16 loop)."""
    return run.get("compute_peak_gflops", run["bf16_peak_gflops"])


def header(run):
    probes = run.get("probes")
    bw = f"read bandwidth {run['read_bandwidth_gbs']:.1f} GB/s"
    peak = (f"compute peak {compute_peak(run):.0f} GFLOP/s (the faster of the bf16 vdpbf16ps loop, "
            f"{run['bf16_peak_gflops']:.0f}, and the fp32 FMA loop, {run.get('fma_peak_gflops', 0):.0f})")
    if run.get("amx_peak_gflops", 0) > 0:
        peak += f"; AMX tdpbf16ps loop {run['amx_peak_gflops']:.0f} GFLOP/s"
    if probes:
        bw += " (" + " / ".join(f"{p['read_bandwidth_gbs']:.1f}" for p in probes) + \
            " at start / end)"
        peak += " (" + " / ".join(f"{compute_peak(p):.0f}" for p in probes) + " at start / end)"
    flush = run.get("flush_bytes", 0)
    cache = (f"cold caches ({flush / 2**20:.0f} MiB read before every timed call)" if flush
             else "warm caches (no flush between calls)")
    line = (f"ISA {run['isa']}, {run['threads']} threads, median of {run['iterations']}, {cache}; "
            f"{bw}, {peak}, same run; each row against its roofline, min(read bandwidth, its "
            f"dtype's compute ceiling on its engine / its FLOP per byte) (docs/perf.md, \"Roofline\")")
    if any(r.get("bound") == "" or "bound" not in r for r in run["results"]) and \
            run.get("read_bandwidth_gbs", 0) > 0:
        line += ("; rows recorded without their roofline: derived from their GFLOP/s, bytes and "
                 "peak_fraction (the ceiling they were judged against, engine shown as "
                 "\"compute\")")
    for name, info in run.get("peers", {}).items():
        label = PEER_NAMES.get(name, name)
        line += (f"; {label}: torch {info['torch']}" if "torch" in info
                 else f"; {label}: {info.get('skipped', 'absent')}")
        if "amx_note" in info:  # what the peer found about AMX (bench/peer_common.py amx_state)
            line += f" ({info['amx_note']})"
        elif "note" in info:  # what the peer found about the CPU (bench/pace_peer.py)
            line += f" ({info['note']})"
    if "pages" in run:  # bench/peers.py --pages: every process's caches on these pages
        line += (f"; caches on {'2 MiB' if run['pages'] == '2m' else '4 KiB'} pages on every side "
                 f"(THP {run.get('thp_mode') or 'unknown'})")
    if run.get("load_average_at_end"):
        line += f"; load average at the end {run['load_average_at_end'][0]:.1f}"
    return line


def peer_cells(row, name, with_isa=False):
    """ms/call, [isa,] speed-up of kvflash over the peer."""
    a = row.get("peers", {}).get(name)
    isa = [a.get("isa", "-") if a else "-"] if with_isa else []
    if not a:
        return ["-", *isa, "-"]
    if "ms_per_call" not in a:
        # Skipped: the peer has no such kernel (int8 KV); the reason is in the run's JSON.
        return ["n/a" if "skipped" in a else f"error ({a.get('error', '?')})", *isa, "-"]
    # reused: the peer ran this shape already (a cache layout it runs the same way): same figure.
    mark = " (=)" if a.get("reused") else ""
    return [f"{a['ms_per_call']:.3f}{mark}", *isa,
            f"{a['ms_per_call'] / row['ms_per_call']:.2f}x"]


def peer_columns(run, peers, op):
    cols = []
    for p in peers:
        cols += [f"{PEER_NAMES.get(p, p)} ms"] + (["isa"] if peer_has_isa(run, p, op) else []) + \
            ["speed-up"]
    return cols


def check(row):
    return "passed" if row["check_passed"] else "FAILED"


def ifa_table(run):
    rows = [r for r in run["results"] if r.get("op", "ifa") == "ifa"]
    if not rows:
        return ""
    peers = peer_names(run, "ifa")
    capi = has_capi(run, rows)
    cols = ["problem", "ms/call", "GB/s", "of read bw", "FLOP/B", "bound", "of roofline",
            *(["C API / C++"] if capi else []), *peer_columns(run, peers, "ifa"), "check"]
    note = ("(=): the peer's figure for the same shape in an earlier row (it has one cache layout: "
            "SDPA dense BNSD, vLLM its own paged cache, PACE its SlabPool blocks or dense "
            "BNSD), not a second measurement; n/a: the peer has no such kernel (none has an int8 "
            "KV cache; PACE's decode is bf16 only)")
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        cells = [f"`{r['problem']}`", f"{r['ms_per_call']:.3f}", f"{r['gbs']:.1f}",
                 frac(r["gbs"], run["read_bandwidth_gbs"]), *roof_cells(run, r),
                 *([capi_cell(r)] if capi else [])]
        for p in peers:
            cells += peer_cells(r, p, peer_has_isa(run, p, "ifa"))
        cells.append(check(r))
        lines.append("| " + " | ".join(cells) + " |")
    if capi:
        note = ("C API / C++: the call through aclnnIncreFlashAttentionV4 (GetWorkspaceSize, "
                "aclrtMalloc, launch on a stream, synchronize) over IfaPlan::run, timed alternately "
                "(kvflash bench --capi); n/a: a call with no aclnn form") + \
            ("; " + note if peers else "")
    if peers or capi:
        lines += ["", note]
    return "\n".join(lines)


def sfa_table(run):
    rows = [r for r in run["results"] if r.get("op") == "sfa"]
    if not rows:
        return ""
    peers = peer_names(run, "sfa")
    cols = ["problem", "ms/call", "GFLOP/s", "of compute peak", "gathered GB/s", "of read bw",
            "FLOP/B", "bound", "of roofline", *peer_columns(run, peers, "sfa"), "check"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        cells = [f"`{r['problem']}`", f"{r['ms_per_call']:.3f}", f"{r['gflops']:.0f}",
                 frac(r["gflops"], row_ceiling(run, r)), f"{r['gbs']:.1f}",
                 frac(r["gbs"], run["read_bandwidth_gbs"]), *roof_cells(run, r)]
        for p in peers:
            cells += peer_cells(r, p, peer_has_isa(run, p, "sfa"))
        cells.append(check(r))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def compute_table(run):
    """The indexer and prefill rows (li:, fia:, pfa: problems): their rates and roofline."""
    rows = [r for r in run["results"] if r.get("op") in ("li", "fia", "pfa")]
    if not rows:
        return ""
    cols = ["problem", "ms/call", "GFLOP/s", "GB/s", "FLOP/B", "bound", "of roofline", "check"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        lines.append("| " + " | ".join([f"`{r['problem']}`", f"{r['ms_per_call']:.3f}",
                                        f"{r['gflops']:.0f}", f"{r['gbs']:.1f}",
                                        *roof_cells(run, r), check(r)]) + " |")
    return "\n".join(lines)


def row_ceiling(run, row):
    """The compute ceiling the row is held to: its own (ceiling_gflops), else the run's vector
    peak (older runs)."""
    return row["ceiling_gflops"] if row.get("ceiling_gflops", 0) > 0 else compute_peak(run)


def kv_cache_table(run):
    """The cache writes (kvcache: problems): bytes moved (rows read + written) per second, and the
    time of a plain copy of the same rows timed alternately with it (of copy speed: copy / write)."""
    rows = [r for r in run["results"] if r.get("op") == "kvcache"]
    if not rows:
        return ""
    cols = ["problem", "ms/call", "GB/s (read + written)", "of read bw", "of roofline",
            "plain copy ms/call", "of copy speed", "check"]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        timed = r.get("copy_ratio", 0) > 0  # older runs have no plain copy
        lines.append("| " + " | ".join([f"`{r['problem']}`", f"{r['ms_per_call']:.3f}",
                                        f"{r['gbs']:.1f}",
                                        frac(r["gbs"], run["read_bandwidth_gbs"]),
                                        roof_cells(run, r)[2],
                                        f"{r['copy_ms_per_call']:.3f}" if timed else "-",
                                        f"{r['copy_ratio']:.2f}" if timed else "-",
                                        check(r)]) + " |")
    return "\n".join(lines)


def fixed_cost_table(run):
    rows = [r for r in run["results"]
            if r.get("op", "ifa") == "ifa" and r["batch"] * r["kv_len"] <= FIXED_COST_TOKENS]
    if not rows:
        return ""
    lines = ["| problem | us/call (fixed per-call cost) | check |", "|---|---|---|"]
    for r in rows:
        lines.append(f"| `{r['problem']}` | {r['ms_per_call'] * 1e3:.1f} | {check(r)} |")
    return "\n".join(lines)


def spread(values, fmt):
    """min - max (median n) of a list, or None when empty."""
    if not values:
        return None
    v = sorted(values)
    return f"{fmt.format(v[0])} - {fmt.format(v[-1])} (median {fmt.format(v[len(v) // 2])}, n={len(v)})"


def headline(run):
    """The ratios the round-2 targets are stated in: IFA at >= 4k tokens per sequence against the
    read bandwidth per KV dtype and against each peer, SFA against the compute peak (128 heads) and
    the read bandwidth (fewer heads), the fixed per-call cost."""
    ifa = [r for r in run["results"] if r.get("op", "ifa") == "ifa" and r["kv_len"] >= 4096]
    lines = []
    bw = run["read_bandwidth_gbs"]
    # Of the roofline, per KV dtype and GQA group G = heads / kv_heads, with the bounds seen.
    groups = sorted({(r["kv_dtype"], r["heads"] // max(r["kv_heads"], 1)) for r in ifa})
    for dtype, g in groups:
        rs = [r for r in ifa if r["kv_dtype"] == dtype and r["heads"] // max(r["kv_heads"], 1) == g]
        fs = [f for f in (roof(run, r) for r in rs) if f]
        sp = spread([f["roofline_fraction"] for f in fs], "{:.2f}")
        if sp:
            bounds = ", ".join(sorted({f["bound"] for f in fs}))
            lines.append(f"- IFA {dtype} KV, G={g}, >= 4k tokens: {sp} of the roofline "
                         f"({bounds}-bound)")
    if bw > 0:
        for dtype in sorted({r["kv_dtype"] for r in ifa}):
            sp = spread([r["gbs"] / bw for r in ifa if r["kv_dtype"] == dtype], "{:.2f}")
            lines.append(f"- IFA {dtype} KV, >= 4k tokens: {sp} of the read bandwidth")
    capi = [r["capi_ratio"] for r in run["results"] if r.get("capi_ratio", 0) > 0]
    if capi:
        lines.append(f"- C API path / C++ API, per ifa row: {spread(capi, '{:.2f}')}")
    for name in peer_names(run, "ifa"):
        sp = spread([r["peers"][name]["ms_per_call"] / r["ms_per_call"] for r in ifa
                     if "ms_per_call" in r.get("peers", {}).get(name, {})], "{:.2f}x")
        if sp:
            lines.append(f"- IFA >= 4k tokens, speed-up over {PEER_NAMES.get(name, name)}: {sp}")
    for r in run["results"]:
        if r.get("op") in ("sfa", "li", "fia", "pfa"):
            what = []
            f = roof(run, r)
            if f:
                what.append(f"{f['roofline_fraction']:.2f} of the roofline ({f['bound']}-bound, "
                            f"{f['intensity']:.3g} FLOP/B)")
            peak = row_ceiling(run, r)
            if peak > 0 and r.get("op") == "sfa":
                what.append(f"{r['gflops'] / peak:.2f} of the compute peak")
            if bw > 0 and r.get("op") == "sfa":
                what.append(f"{r['gbs'] / bw:.2f} of the read bandwidth (gathered bytes)")
            for name, a in r.get("peers", {}).items():
                if "ms_per_call" in a:
                    what.append(f"{a['ms_per_call'] / r['ms_per_call']:.2f}x "
                                f"{PEER_NAMES.get(name, name)}")
            if what:
                lines.append(f"- `{r['problem']}`: " + ", ".join(what))
    for r in run["results"]:
        if r.get("op", "ifa") == "ifa" and r["batch"] * r["kv_len"] <= FIXED_COST_TOKENS:
            lines.append(f"- fixed per-call cost (`{r['problem']}`): {r['ms_per_call'] * 1e3:.1f} us")
    return "\n".join(lines)


def report(run):
    parts = [header(run)]
    h = headline(run)
    if h:
        parts += ["**Headline ratios**", h]
    for title, t in (("IFA decode", ifa_table(run)), ("SFA (sparse MLA) decode", sfa_table(run)),
                     ("Indexer and prefill", compute_table(run)),
                     ("KV cache writes", kv_cache_table(run)),
                     ("Fixed per-call cost", fixed_cost_table(run))):
        if t:
            parts += [f"**{title}**", t]
    return "\n\n".join(parts)


def write_csv(run, path):
    """One line a problem: kvflash's figures and fractions, then per peer its ms/call, isa,
    speed-up (empty where it did not run the problem) and why not."""
    peers = peer_names(run)
    fields = ["problem", "op", "kv_dtype", "ms_per_call", "gbs", "gflops", "of_read_bw",
              "of_compute_peak", "intensity", "bound", "ceiling_engine", "ceiling_gflops",
              "roofline_ms", "of_roofline", "capi_ratio", "check"]
    for p in peers:
        fields += [f"{p}_ms", f"{p}_isa", f"{p}_speedup", f"{p}_note"]
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        for r in run["results"]:
            line = {"problem": r["problem"], "op": r.get("op", "ifa"), "kv_dtype": r["kv_dtype"],
                    "ms_per_call": r["ms_per_call"], "gbs": r["gbs"], "gflops": r["gflops"],
                    "of_read_bw": r["gbs"] / run["read_bandwidth_gbs"]
                    if run["read_bandwidth_gbs"] > 0 else "",
                    "of_compute_peak": r["gflops"] / row_ceiling(run, r)
                    if row_ceiling(run, r) > 0 else "",
                    "capi_ratio": r.get("capi_ratio") or "",
                    "check": check(r)}
            f = roof(run, r)
            if f:
                line.update({"intensity": f["intensity"], "bound": f["bound"],
                             "ceiling_engine": f["ceiling_engine"],
                             "ceiling_gflops": f["ceiling_gflops"],
                             "roofline_ms": f["roofline_ms"], "of_roofline": f["roofline_fraction"]})
            for p in peers:
                a = r.get("peers", {}).get(p, {})
                line[f"{p}_isa"] = a.get("isa", "")
                line[f"{p}_note"] = a.get("skipped", a.get("error", "reused" if a.get("reused")
                                                           else ""))
                if "ms_per_call" in a:
                    line[f"{p}_ms"] = a["ms_per_call"]
                    line[f"{p}_speedup"] = a["ms_per_call"] / r["ms_per_call"]
            w.writerow(line)


def beside_table(runs):
    """The problems of runs[0], each run's ceiling fraction and speed-ups over each peer side by
    side (columns headed by the run's thread count); a peer's isa from the first run that has it."""
    peers = [p for p in PEER_ORDER if any(p in peer_names(r) for r in runs)]
    index = [{r2["problem"]: r2 for r2 in r["results"]} for r in runs]
    with_isa = [p for p in peers if any(peer_has_isa(r, p, op) for r in runs
                                        for op in ("ifa", "sfa"))]
    cols = ["problem"] + [f"{p} isa" for p in with_isa]
    threads = [r["threads"] for r in runs]
    for k, r in enumerate(runs):
        t = f"{r['threads']}t"
        if threads.count(r["threads"]) > 1:  # two runs at one thread count: numbered in order
            t += f"#{threads[:k + 1].count(r['threads'])}"
        cols += [f"{t} of roofline"] + [f"{t} vs {p}" for p in peers]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in runs[0]["results"]:
        name = row["problem"]
        cells = [f"`{name}`"]
        for p in with_isa:
            isa = next((i[name]["peers"][p].get("isa") for i in index
                        if name in i and "isa" in i[name].get("peers", {}).get(p, {})), None)
            cells.append(isa or "-")
        for r, i in zip(runs, index):
            x = i.get(name)
            if x is None:
                cells += ["-"] * (1 + len(peers))
                continue
            f = roof(r, x)
            cells.append(f"{f['roofline_fraction']:.2f} {f['bound']}" if f else "-")
            for p in peers:
                a = x.get("peers", {}).get(p, {})
                cells.append(f"{a['ms_per_call'] / x['ms_per_call']:.2f}x" if "ms_per_call" in a
                             else "-")
        lines.append("| " + " | ".join(cells) + " |")
    heads = "; ".join(f"run {k + 1}, {r['threads']} threads: read bandwidth {r['read_bandwidth_gbs']:.1f} GB/s, "
                      f"compute peak {compute_peak(r):.0f} GFLOP/s" for k, r in enumerate(runs))
    return heads + "\n\n" + "\n".join(lines)


def plot_series(run):
    """The KV-length series: IFA rows of the most common shape apart from kv_len and dtype."""
    shapes = {}
    for r in run["results"]:
        if r.get("op", "ifa") != "ifa":
            continue
        key = (r["batch"], r.get("heads"), r.get("kv_heads"), r.get("head_dim"), r["paged"],
               r.get("layout"))
        shapes.setdefault(key, set()).add((r["kv_dtype"], r["kv_len"]))
    if not shapes:
        return None, []
    best = max(shapes, key=lambda k: len(shapes[k]))
    rows = [r for r in run["results"] if r.get("op", "ifa") == "ifa" and
            (r["batch"], r.get("heads"), r.get("kv_heads"), r.get("head_dim"), r["paged"],
             r.get("layout")) == best]
    return best, rows


def plot(run, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("report.py: matplotlib is not installed; no plot (pip install matplotlib)",
              file=sys.stderr)
        return False
    shape, rows = plot_series(run)
    fig, (ax, rax) = plt.subplots(1, 2, figsize=(13, 5), gridspec_kw={"width_ratios": [3, 2]})
    markers = {"sdpa": "s", "vllm": "^", "sglang": "v", "pace": "D", "pace_dense": "d"}
    for i, dtype in enumerate(sorted({r["kv_dtype"] for r in rows})):
        color = f"C{i}"
        mine = sorted((r["kv_len"], r["gbs"]) for r in rows if r["kv_dtype"] == dtype)
        ax.plot([p[0] for p in mine], [p[1] for p in mine], marker="o", color=color,
                label=f"kvflash {dtype} KV")
        # Right: the same rows as fractions of their roofline (each its own bound).
        fr = sorted((r["kv_len"], f["roofline_fraction"]) for r in rows
                    if r["kv_dtype"] == dtype and (f := roof(run, r)))
        if fr:
            rax.plot([p[0] for p in fr], [p[1] for p in fr], marker="o", color=color,
                     label=f"kvflash {dtype} KV")
        for name in peer_names(run):
            pts = sorted((r["kv_len"], r["peers"][name]["gbs"]) for r in rows
                         if r["kv_dtype"] == dtype and "gbs" in r.get("peers", {}).get(name, {}))
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=markers.get(name, "x"),
                        linestyle=":", color=color,
                        label=f"{PEER_NAMES.get(name, name)} {dtype} KV")
    if run["read_bandwidth_gbs"] > 0:
        ax.axhline(run["read_bandwidth_gbs"], color="black", linestyle="--",
                   label="measured read bandwidth")
    ax.set_ylim(bottom=0)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("KV length per sequence (tokens)")
    ax.set_ylabel("bytes moved (KV, query, output) / time (GB/s)")
    if shape:
        b, n, kvn, d, paged, layout = shape
        cache = f"paged {paged} {layout}" if paged else "contiguous"
        ax.set_title(f"IFA decode B={b} N={n} KV_N={kvn} D={d} {cache}, {run['isa']}, "
                     f"{run['threads']} threads", fontsize=10)
    ax.legend(fontsize=8)
    rax.axhline(1.0, color="black", linestyle="--", label="the roofline")
    rax.set_xscale("log", base=2)
    rax.set_ylim(bottom=0, top=max(1.1, rax.get_ylim()[1]))  # warm caches can beat the roof
    rax.set_xlabel("KV length per sequence (tokens)")
    rax.set_ylabel("fraction of the roofline")
    rax.set_title("of min(read bandwidth, ceiling / intensity)", fontsize=10)
    rax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", help="JSON written by bench/peers.py or kvflash bench --json")
    ap.add_argument("--plot", help="write a PNG plot here")
    ap.add_argument("--csv", help="write the rows as CSV here")
    ap.add_argument("--beside", nargs="+", metavar="RUN",
                    help="other runs of the same problems: one side-by-side table")
    args = ap.parse_args()
    with open(args.run) as f:
        run = json.load(f)
    if args.beside:
        others = []
        for path in args.beside:
            with open(path) as f:
                others.append(json.load(f))
        print(beside_table([run, *others]))
        return 0
    print(report(run))
    if args.csv:
        write_csv(run, args.csv)
    if args.plot and not plot(run, args.plot):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
