"""Context-parallel decode scaling on local gloo ranks (docs/distributed.md's table).

    .venv/bin/python bench/cp_scaling.py --ranks 1 2 4 --tokens 32768

For each world size: one IFA decode step (B, N, KV_N, D as given, bf16, contiguous shards of
--tokens positions) timed per phase on every rank: the local op, the all_gather of the partials,
the merge. Prints the median over --steps steps of the slowest rank, and the bytes each rank
reads (its KV shard) and sends (B x N x (D + 1) x 4).
"""
import argparse
import os
import socket
import statistics
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def _port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank, world, port, a, q_out):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), GLOO_SOCKET_IFNAME="lo")
    torch.set_num_threads(a.threads)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    import kvflash
    from kvflash import distributed as kd
    g = torch.Generator().manual_seed(0)
    n_local = a.tokens // world
    b, n, kvn, d = a.batch, a.heads, a.kv_heads, a.dim
    q = torch.randn(b, 1, n * d, generator=g).bfloat16()
    # Timing does not depend on the values: uniform bf16 data, cheap to make.
    k = torch.empty(b, n_local, kvn * d, dtype=torch.bfloat16).uniform_(-1, 1, generator=g)
    v = torch.empty(b, n_local, kvn * d, dtype=torch.bfloat16).uniform_(-1, 1, generator=g)
    bounds = [n_local * r for r in range(world + 1)]
    kw = dict(num_heads=n, num_key_value_heads=kvn, input_layout="BSH",
              scale_value=d ** -0.5, return_softmax_lse=True)
    times = {"local": [], "gather": [], "merge": [], "step": []}
    for step in range(a.steps + 2):
        dist.barrier()
        t0 = time.perf_counter()
        out, lse = kvflash.incre_flash_attention(q, k, v, actual_seq_lengths=[n_local] * b, **kw)
        t1 = time.perf_counter()
        parts = torch.cat([out.reshape(b, n, d).float(), lse.reshape(b, n, 1)], 2)
        bufs = [torch.empty_like(parts) for _ in range(world)]
        dist.all_gather(bufs, parts)
        t2 = time.perf_counter()
        gathered = torch.stack(bufs)
        torch.ops.kvflash.merge_attention_states(gathered[..., :d], gathered[..., d],
                                                 out_dtype=torch.bfloat16)
        t3 = time.perf_counter()
        if step >= 2:
            times["local"].append(t1 - t0)
            times["gather"].append(t2 - t1)
            times["merge"].append(t3 - t2)
            times["step"].append(t3 - t0)
        # The library call end to end (checks the API path costs what the phases say).
    t = time.perf_counter()
    for _ in range(a.steps):
        kd.context_parallel_incre_flash_attention(q, k, v, sharding=kd.ContiguousShards(bounds),
                                                  actual_seq_lengths=[a.tokens] * b, **kw)
    api = (time.perf_counter() - t) / a.steps
    med = {key: statistics.median(val) for key, val in times.items()}
    med["api"] = api
    keys = sorted(med)
    mine = torch.tensor([med[key] for key in keys], dtype=torch.float64)
    dist.all_reduce(mine, op=dist.ReduceOp.MAX)  # the slowest rank of each phase
    if rank == 0:
        q_out.put(dict(zip(keys, mine.tolist())))
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ranks", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--tokens", type=int, default=65536)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--heads", type=int, default=32)
    p.add_argument("--kv-heads", type=int, default=8)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args()
    ctx = mp.get_context("spawn")
    print("ranks | KV read/rank (MB) | sent/rank (KB) | local (ms) | all_gather (ms) | "
          "merge (ms) | step (ms) | API call (ms)")
    for world in a.ranks:
        q = ctx.Queue()
        mp.start_processes(_worker, args=(world, _port(), a, q), nprocs=world, join=True,
                           start_method="spawn")
        r = q.get()
        kv = 2 * a.batch * (a.tokens // world) * a.kv_heads * a.dim * 2 / 1e6
        sent = a.batch * a.heads * (a.dim + 1) * 4 / 1e3
        print(f"{world} | {kv:.1f} | {sent:.1f} | {r['local'] * 1e3:.2f} | "
              f"{r['gather'] * 1e3:.2f} | {r['merge'] * 1e3:.3f} | {r['step'] * 1e3:.2f} | "
              f"{r['api'] * 1e3:.2f}")


if __name__ == "__main__":
    main()
