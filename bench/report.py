#!/usr/bin/env python3
"""Turns a `kvflash bench --json` run into the Markdown table of docs/perf.md and, when matplotlib
is installed (pip install matplotlib; never needed by CI), a PNG plot of GB/s against KV length per
KV dtype with the run's measured read bandwidth as a line.

    python3 bench/report.py run.json                 # table on stdout
    python3 bench/report.py run.json --plot perf.png # and the plot
"""
import argparse
import json
import sys


def table(run):
    lines = [
        f"ISA {run['isa']}, {run['threads']} threads, median of {run['iterations']}; "
        f"read bandwidth {run['read_bandwidth_gbs']:.1f} GB/s, "
        f"bf16 peak {run['bf16_peak_gflops']:.0f} GFLOP/s (same run)",
        "",
        "| problem | ms/call | GB/s | of read bw | GFLOP/s | check |",
        "|---|---|---|---|---|---|",
    ]
    for r in run["results"]:
        frac = f"{r['bw_fraction']:.2f}" if run["read_bandwidth_gbs"] > 0 else "-"
        lines.append(
            f"| `{r['problem']}` | {r['ms_per_call']:.3f} | {r['gbs']:.1f} | {frac} | "
            f"{r['gflops']:.1f} | {'passed' if r['check_passed'] else 'FAILED'} |")
    return "\n".join(lines)


def plot(run, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("report.py: matplotlib is not installed; no plot (pip install matplotlib)",
              file=sys.stderr)
        return False
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for dtype in sorted({r["kv_dtype"] for r in run["results"]}):
        pts = sorted((r["kv_len"], r["gbs"]) for r in run["results"] if r["kv_dtype"] == dtype)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"kvflash {dtype} KV")
    if run["read_bandwidth_gbs"] > 0:
        ax.axhline(run["read_bandwidth_gbs"], color="black", linestyle="--",
                   label="measured read bandwidth")
    ax.set_ylim(bottom=0)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("KV length per sequence (tokens)")
    ax.set_ylabel("KV bytes read / time (GB/s)")
    ax.set_title(f"kvflash IFA decode, {run['isa']}, {run['threads']} threads")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", help="JSON written by kvflash bench --json")
    ap.add_argument("--plot", help="write a PNG plot here")
    args = ap.parse_args()
    with open(args.run) as f:
        run = json.load(f)
    print(table(run))
    if args.plot and not plot(run, args.plot):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
