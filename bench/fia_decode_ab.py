#!/usr/bin/env python3
"""FIA decode against IFA decode on the same shapes, alternated in one `kvflash bench` run.

Each pair (a fia: string and the ifa: string of the same shape) is run back to back, the pairs in
order, for --rounds rounds, all in one process (so both see the same machine state, cold caches
before every timed call as `kvflash bench` does). Prints, per pair, the median ms of each side over
the rounds, the median over rounds of each round's fia / ifa (the two calls of a round are adjacent
in time, so they share the machine's load) and the ratio of the fastest calls. On a shared machine
single calls scatter by 10-50 %: docs/perf-log.md records these with the load.

  bench/fia_decode_ab.py --kvflash build/ci/kvflash --rounds 5 --iters 10
"""
import argparse
import re
import statistics
import subprocess
import sys

# Llama-3-8B heads (N = 32, KV_N = 8, D = 128), paged 128.
SHAPE = "n32,kvn8,d128,paged=128"


def pairs():
    out = []
    for b, s in ((2, 8192), (4, 4096), (8, 4096), (8, 8192)):
        ifa = f"ifa:b{b},s{s},{SHAPE},kv=bf16"
        out.append((f"fia:b{b},q1,s{s},{SHAPE}", ifa, "bf16"))
    for b, s in ((4, 4096), (8, 8192)):
        out.append((f"fia:b{b},q1,s{s},{SHAPE},kv=int8", f"ifa:b{b},s{s},{SHAPE},kv=int8",
                    "int8 per-channel"))
        # IFA has no per-token parameters: its per-channel int8 call is the yardstick.
        out.append((f"fia:b{b},q1,s{s},{SHAPE},kv=int8t", f"ifa:b{b},s{s},{SHAPE},kv=int8",
                    "int8 per-token (ifa: per-channel)"))
    for b, s in ((4, 4096), (8, 8192)):
        ifa = f"ifa:b{b},s{s},{SHAPE},kv=bf16"
        out.append((f"fia:b{b},q1,s{s},{SHAPE},lse=1", ifa, "bf16, LSE (ifa: none)"))
        out.append((f"fia:q1x{b},s{s},{SHAPE},mode=3,lse=1,sink=1", ifa,
                    "bf16 TND mode 3, LSE + sink (ifa: none)"))
    return out


LINE = re.compile(r"^(fia|ifa|pfa)\s+(\S+)\s.*?([0-9.]+) ms/call")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kvflash", default="build/ci/kvflash")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--extra", nargs="*", default=[],
                    help="more problem strings, alternated with the pairs (each alone)")
    args = ap.parse_args()
    ps = pairs()
    order = []
    for _ in range(args.rounds):
        for f, i, _what in ps:
            order += [f, i]
        order += args.extra
    cmd = [args.kvflash, "bench", "--iters", str(args.iters), "--no-bandwidth"]
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    proc = subprocess.run(cmd + order, capture_output=True, text=True)
    times = {}
    seq = []  # (problem, ms) in run order: pair k of round r is adjacent in time
    for line in proc.stdout.splitlines():
        m = LINE.match(line)
        if m:
            times.setdefault(m.group(2), []).append(float(m.group(3)))
            seq.append((m.group(2), float(m.group(3))))
    stride = 2 * len(ps) + len(args.extra)
    ratios = {k: [] for k in range(len(ps))}
    for r in range(args.rounds):
        for k in range(len(ps)):
            at = r * stride + 2 * k
            if at + 1 < len(seq) and seq[at][0] == ps[k][0] and seq[at + 1][0] == ps[k][1]:
                ratios[k].append(seq[at][1] / seq[at + 1][1])
    if proc.returncode != 0 or "FAILED" in proc.stdout:
        sys.stdout.write(proc.stdout[-3000:] + proc.stderr[-2000:])
        print("kvflash bench failed or a check failed", file=sys.stderr)
    print(f"| fia problem | what | fia ms (median of {args.rounds}) | ifa ms | "
          "median of the rounds' fia / ifa | fastest fia / fastest ifa |")
    print("|---|---|---|---|---|---|")
    for k, (f, i, what) in enumerate(ps):
        tf, ti = times.get(f, []), times.get(i, [])
        if not tf or not ti or not ratios[k]:
            print(f"| `{f}` | {what} | - | - | missing | |")
            continue
        mf, mi = statistics.median(tf), statistics.median(ti)
        print(f"| `{f}` | {what} | {mf:.3f} | {mi:.3f} | {statistics.median(ratios[k]):.3f} | "
              f"{min(tf) / min(ti):.3f} |")
    for e in args.extra:
        te = times.get(e, [])
        if te:
            print(f"| `{e}` | alone | {statistics.median(te):.3f} | | |")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
