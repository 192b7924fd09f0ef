"""What the peer workers of bench/peers.py share (imported by bench/sdpa_peer.py and
bench/vllm_peer.py, which run in their own Python environments with their own torch).

A worker reads one JSON request a line on stdin (an `ifa` row of `kvflash bench --json`: batch,
kv_len, heads, kv_heads, head_dim, kv_dtype, paged) and answers one JSON line on stdout:
{"ms_per_call", "gbs", "check": {"elements", "worst_err_over_tol", "passed"}} or {"skipped": why}
or {"error": message}. Every kernel's output is checked against an fp64 reference on the first
sequence, every element, before it is timed; a kernel that fails the check is not timed.
"""
import json
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
    """Every element of sequence 0 of out (B, N, D) against fp64 attention; returns the check."""
    n, d = q.shape[1], q.shape[2]
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
    return {"elements": n * d, "worst_err_over_tol": worst, "passed": worst <= 1.0}


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
    return 2.0 * req["batch"] * req["kv_len"] * req["kv_heads"] * req["head_dim"] * 2


def serve(name, handler):
    """The request loop: results for a repeated shape come from a cache (layout variants that a
    peer runs the same way)."""
    cache = {}
    print(json.dumps({"ready": name, "torch": torch.__version__,
                      "threads": torch.get_num_threads()}), flush=True)
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
