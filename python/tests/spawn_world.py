"""Runs a test world: `world` spawned processes, each `worker(rank, world, port, out_dir)` with a
free local TCP port for its process group, each saving its results to out_dir/rank{r}.pt (a dict,
with an "error" entry when the rank failed). Shared by the context-parallel tests."""
import os
import socket
import time

import torch
import torch.multiprocessing as mp


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_world(worker, world, out_dir, deadline_s):
    """Every rank's saved results, in rank order; asserts that every rank finished within
    deadline_s, exited 0 and reported no error."""
    ctx = mp.get_context("spawn")
    port = free_port()
    procs = [ctx.Process(target=worker, args=(r, world, port, out_dir)) for r in range(world)]
    for p in procs:
        p.start()
    deadline = time.monotonic() + deadline_s
    for p in procs:
        p.join(max(0.0, deadline - time.monotonic()))
    hung = [p for p in procs if p.is_alive()]
    for p in hung:
        p.kill()
        p.join()
    assert not hung, f"world {world}: ranks still running after {deadline_s} s"
    assert all(p.exitcode == 0 for p in procs), [p.exitcode for p in procs]
    res = [torch.load(os.path.join(out_dir, f"rank{r}.pt")) for r in range(world)]
    for r, x in enumerate(res):
        assert "error" not in x, f"rank {r}: {x['error']}"
    return res
