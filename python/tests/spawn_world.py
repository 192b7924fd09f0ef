"""Runs a test world: `world` spawned processes, each `worker(rank, world, port, out_dir)` with a
free local TCP port for its process group, each saving its results to out_dir/rank{r}.pt (a dict,
with an "error" entry when the rank failed). Shared by the context-parallel tests; a worker is
`rank_main` with the cases it runs."""
import os
import socket
import sys
import time
import traceback

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rank_main(rank, world, port, out_dir, run_cases):
    """One rank's life: joins the gloo group on `port`, runs `run_cases(world, rank, results)`
    (which fills the dict as it goes), records an exception as results["error"] (so that the test
    names the failing case, with the results before it kept), saves the dict, and leaves the group
    together with the other ranks."""
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), GLOO_SOCKET_IFNAME="lo")
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    results = {}
    try:
        run_cases(world, rank, results)
    except Exception as e:
        results["error"] = f"{type(e).__name__}: {e}\n{traceback.format_exc()}"
        print(f"rank {rank}: {results['error']}", file=sys.stderr)
    torch.save(results, os.path.join(out_dir, f"rank{rank}.pt"))
    dist.barrier()
    dist.destroy_process_group()


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
