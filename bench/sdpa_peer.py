#!/usr/bin/env python3
"""PyTorch SDPA on the CPU as a decode-attention peer of kvflash: a worker of bench/peers.py
(protocol in bench/peer_common.py), run with the repo's pinned torch (.venv from
scripts/setup_python.sh).

SDPA gets the dense equivalent of each IFA problem: a contiguous BNSD cache with every sequence at
the problem's length and GQA through enable_gqa, the case it is built for, whatever the paged
layout kvflash read. Int8 KV caches and sfa problems are skipped (SDPA has neither).

    .venv/bin/python bench/sdpa_peer.py --serve --threads 2 --iters 10
"""
import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import peer_common  # noqa: E402


class Sdpa:
    def __init__(self, iters):
        self.iters = iters

    def key(self, req):
        if req.get("op") != "ifa" or req["kv_dtype"] not in peer_common.DTYPES:
            return None
        return (req["batch"], req["kv_len"], req["heads"], req["kv_heads"], req["head_dim"],
                req["kv_dtype"])

    def unsupported(self, req):
        return "SDPA has no sparse attention" if req.get("op") != "ifa" else "SDPA has no int8 KV"

    def run(self, req):
        q, k, v = peer_common.make_inputs(req)
        q4 = q.unsqueeze(2)  # (B, N, 1, D)
        gqa = req["heads"] != req["kv_heads"]
        scale = 1.0 / math.sqrt(req["head_dim"])
        with torch.inference_mode():
            def call():
                return F.scaled_dot_product_attention(q4, k, v, enable_gqa=gqa, scale=scale)
            check = peer_common.check_first_sequence(q, k, v, call().squeeze(2), scale)
            if not check["passed"]:
                return {"check": check, "error": "output differs from the fp64 reference"}
            ms = peer_common.median_ms(call, self.iters, flush_bytes=req.get("flush_bytes", 0))
        return {"ms_per_call": ms, "gbs": peer_common.kv_bytes(req) / ms / 1e6, "check": check,
                "layout": "dense BNSD"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--serve", action="store_true", required=True,
                    help="answer JSON requests on stdin (bench/peers.py)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iters", type=int, default=10)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    peer_common.serve("sdpa", Sdpa(args.iters))


if __name__ == "__main__":
    main()
