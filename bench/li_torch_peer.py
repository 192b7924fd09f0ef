"""The LightningIndexer computation written the way a PyTorch user would (issue 21, "Peer"):
the same shapes as bench/li_bench.cpp (TND decode rows, a PA_BSND cache of 128-token blocks in
shuffled order, 64 heads, D = 128, bf16, sparse_count 2048), gathered through the block table,
then einsum, relu, the weighted head sum and torch.topk. Caches are cold (a 256 MiB buffer is
read between repetitions); the fastest repetition is reported (with one thread, its thread CPU
time when smaller, excluding preemption on a shared machine), like li_bench.

    /work/main/.venv/bin/python bench/li_torch_peer.py --rows 4 --keys 8192 --threads 1

Compare with `kvflash_li_bench ROWS KEYS THREADS` run in the same session.
"""

import argparse
import time

import torch


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=4)
    ap.add_argument("--keys", type=int, default=8192)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    heads, d, block, k = 64, 128, 128, 2048
    blocks_per = (a.keys + block - 1) // block
    num_blocks = a.rows * blocks_per
    q = torch.randn(a.rows, heads, d).to(torch.bfloat16)
    w = torch.randn(a.rows, heads).to(torch.bfloat16)
    cache = torch.randn(num_blocks, block, 1, d).to(torch.bfloat16)
    block_table = torch.randperm(num_blocks, dtype=torch.int32).view(a.rows, blocks_per)
    flush = torch.ones(256 << 20, dtype=torch.uint8)

    def indexer():
        # [rows, blocks_per * block, d]: the user's gather of each request's cache rows.
        keys = cache[block_table.long()].view(a.rows, blocks_per * block, d)[:, : a.keys]
        scores = torch.einsum("rhd,rsd->rhs", q, keys)  # bf16 matmul, fp32 accumulation inside
        scores = torch.relu(scores.float()) * w.float().unsqueeze(-1)
        scores = scores.sum(dim=1)  # [rows, keys]
        return torch.topk(scores, min(k, a.keys), dim=-1).indices.to(torch.int32)

    indexer()  # warm-up
    times, cpu = [], []
    for _ in range(a.reps):
        flush.add_(1)
        t0, c0 = time.perf_counter(), time.thread_time()
        indexer()
        cpu.append(time.thread_time() - c0)
        times.append(time.perf_counter() - t0)
    times.sort()
    cpu.sort()
    # One thread runs in this thread: its CPU time excludes preemption (as li_bench reports).
    t = min(times[0], cpu[0]) if a.threads == 1 else times[0]
    print(
        f"torch rows={a.rows} keys={a.keys} threads={a.threads}: {t * 1e3:.3f} ms (wall min "
        f"{times[0] * 1e3:.3f}, median {times[len(times) // 2] * 1e3:.3f}) torch {torch.__version__}"
    )


if __name__ == "__main__":
    main()
