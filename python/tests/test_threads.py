"""kvflash's parallel loops run on torch's intra-op threads: torch.set_num_threads(1) means one
core, and kvflash never starts threads of its own."""
import os
import threading
import time

import pytest
import torch

from support import IfaSpec, SfaSpec, build_ifa, build_sfa

IFA = torch.ops.kvflash.npu_incre_flash_attention
SFA = torch.ops.kvflash.npu_sparse_flash_attention


@pytest.fixture
def restore_threads():
    n = torch.get_num_threads()
    yield
    torch.set_num_threads(n)


def _os_threads():
    return len(os.listdir("/proc/self/task"))


def _big_ifa():
    return build_ifa(IfaSpec("threads_big", layout="BNSD", batch=4, heads=8, kv_heads=2,
                             kvn_attr=2, dim=128, lens=(4000, 3000, 2500, 4096), slack=0))


def test_thread_count_follows_torch(restore_threads):
    for n in (1, 2, 3):
        torch.set_num_threads(n)
        assert torch.ops.kvflash._num_threads() == n


def test_no_threads_of_its_own(restore_threads):
    torch.set_num_threads(2)
    torch.randn(1 << 22).exp_()  # start torch's intra-op pool
    before = _os_threads()
    q, k, v, kw = _big_ifa()
    for _ in range(3):
        IFA(q, k, v, **kw)
    args, skw = build_sfa(SfaSpec("threads_sfa", heads=16, lse=True, topk=64))
    SFA(*args, **skw)
    assert _os_threads() == before


def _cpu_ticks_per_thread():
    ticks = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except FileNotFoundError:  # the thread ended
            continue
        ticks[tid] = int(fields[11]) + int(fields[12])  # utime + stime
    return ticks


def _cpu_by_thread(fn, seconds=0.5):
    """CPU seconds of each thread that ran, over calls of fn for about `seconds` of wall time."""
    fn()
    hz = os.sysconf("SC_CLK_TCK")
    before, t0 = _cpu_ticks_per_thread(), time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        fn()
    after = _cpu_ticks_per_thread()
    used = {t: (after[t] - before.get(t, 0)) / hz for t in after}
    return {t: c for t, c in used.items() if c > 0}


def test_one_thread_means_one_core(restore_threads):
    """With one torch thread only the calling thread works; with two, a second one joins. Shares
    of the CPU time used, not of the wall time: on a loaded machine each thread runs less."""
    q, k, v, kw = _big_ifa()
    main = str(threading.get_native_id())
    torch.set_num_threads(1)
    used = _cpu_by_thread(lambda: IFA(q, k, v, **kw))
    others = sum(c for t, c in used.items() if t != main)
    assert others <= 0.03 * sum(used.values()) + 0.02, used  # clock-tick granularity: 10 ms
    torch.set_num_threads(2)
    used = _cpu_by_thread(lambda: IFA(q, k, v, **kw))
    assert sum(c for t, c in used.items() if t != main) > 0.1 * sum(used.values()), used


def test_results_do_not_depend_on_the_thread_count(restore_threads):
    q, k, v, kw = _big_ifa()
    args, skw = build_sfa(SfaSpec("threads_bits", heads=16, lse=True, topk=64))
    torch.set_num_threads(1)
    one = IFA(q, k, v, **kw), SFA(*args, **skw)
    torch.set_num_threads(2)
    two = IFA(q, k, v, **kw), SFA(*args, **skw)
    assert torch.equal(one[0], two[0])
    for a, b in zip(one[1], two[1]):
        assert torch.equal(a, b)
