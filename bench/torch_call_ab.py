#!/usr/bin/env python3
"""Per-call time of torch.ops.kvflash.npu_incre_flash_attention on a 16-token decode (plan-cache
hit), two kvflash installs against each other.

Two builds cannot share a process (both register torch.ops.kvflash), so the processes alternate,
A B A B ..., one thread each; each times 7 x 2000 calls (timeit, in the thread's CPU time, which
the other work of a loaded machine does not inflate) and reports its median and its best; the
medians of those over the A and over the B processes are printed.

    python3 bench/torch_call_ab.py A_DIR B_DIR [--rounds 8]

A_DIR and B_DIR hold a `kvflash` package (what `pip install .` or
`cmake --install <build> --component kvflash_python` plus python/kvflash/*.py puts there).
"""
import argparse
import statistics
import subprocess
import sys


def measure(path):
    sys.path.insert(0, path)
    import time
    import timeit

    import torch

    import kvflash  # noqa: F401

    torch.manual_seed(0)
    torch.set_num_threads(1)
    q = torch.randn(1, 1, 8 * 128, dtype=torch.float16)
    k = torch.randn(1, 16, 8 * 128, dtype=torch.float16)
    v = torch.randn(1, 16, 8 * 128, dtype=torch.float16)
    op = torch.ops.kvflash.npu_incre_flash_attention

    def call():
        op(q, k, v, num_heads=8, scale_value=0.088, input_layout="BSH", actual_seq_lengths=[16])

    for _ in range(2000):
        call()
    times = timeit.repeat(call, number=2000, repeat=7, timer=time.thread_time)
    print(statistics.median(times) / 2000 * 1e6, min(times) / 2000 * 1e6)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure:
        measure(args.a)
        return
    runs = {args.a: [], args.b: []}
    for _ in range(args.rounds):
        for path in (args.a, args.b):
            out = subprocess.run([sys.executable, __file__, path, path, "--measure"],
                                 capture_output=True, text=True, check=True).stdout
            runs[path].append([float(x) for x in out.split()[-2:]])
    for label, path in (("A", args.a), ("B", args.b)):
        med = [r[0] for r in runs[path]]
        best = [r[1] for r in runs[path]]
        print(f"{label} {path}: median {statistics.median(med):.2f} us/call, median of the "
              f"processes' best {statistics.median(best):.2f} (per process: "
              f"{' '.join(f'{t:.2f}' for t in med)})")


if __name__ == "__main__":
    main()
