"""The operators' threads: kvflash's own pool (the default) or torch's intra-op pool
(kvflash.set_thread_pool), either one on torch.get_num_threads() threads, the same bits for any
pool and thread count, and a forked child that gets workers of its own."""
import os
import subprocess
import sys
import threading
import time

import pytest
import torch

import kvflash
import kvflash.torch_npu as torch_npu
import fia_support
from support import IfaSpec, SfaSpec, build_ifa, build_li, build_sfa

IFA = torch.ops.kvflash.npu_incre_flash_attention
SFA = torch.ops.kvflash.npu_sparse_flash_attention
POOLS = ("kvflash", "torch")


@pytest.fixture
def restore_threads():
    n, pool = torch.get_num_threads(), kvflash.get_thread_pool()
    yield
    torch.set_num_threads(n)
    kvflash.set_thread_pool(pool)


def _os_threads():
    return len(os.listdir("/proc/self/task"))


def _big_ifa():
    return build_ifa(IfaSpec("threads_big", layout="BNSD", batch=4, heads=8, kv_heads=2,
                             kvn_attr=2, dim=128, lens=(4000, 3000, 2500, 4096), slack=0))


def _import_in_child(env_pool):
    env = {k: v for k, v in os.environ.items() if k != "KVFLASH_THREAD_POOL"}
    if env_pool is not None:
        env["KVFLASH_THREAD_POOL"] = env_pool
    code = "import kvflash; print(kvflash.get_thread_pool())"
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=120)


def test_default_pool_and_the_environment_variable():
    """kvflash's pool unless KVFLASH_THREAD_POOL says otherwise; a bad value fails the import,
    naming the variable and the choices."""
    assert _import_in_child(None).stdout.strip() == "kvflash"
    assert _import_in_child("torch").stdout.strip() == "torch"
    bad = _import_in_child("openmp")
    assert bad.returncode != 0
    assert "KVFLASH_THREAD_POOL" in bad.stderr and '"kvflash"' in bad.stderr, bad.stderr


def test_set_thread_pool_takes_the_two_names_only(restore_threads):
    for pool in POOLS:
        kvflash.set_thread_pool(pool)
        assert kvflash.get_thread_pool() == pool
    for bad in ("openmp", "Torch", "", 2, None):
        with pytest.raises(ValueError, match="kvflash.set_thread_pool"):
            kvflash.set_thread_pool(bad)
    assert kvflash.get_thread_pool() == "torch"  # unchanged by the refusals


@pytest.mark.parametrize("pool", POOLS)
def test_thread_count_follows_torch(restore_threads, pool):
    kvflash.set_thread_pool(pool)
    for n in (1, 2, 3):
        torch.set_num_threads(n)
        assert torch.ops.kvflash._num_threads() == n


def test_torch_pool_starts_no_threads_of_its_own(restore_threads):
    kvflash.set_thread_pool("torch")
    torch.set_num_threads(2)
    torch.randn(1 << 22).exp_()  # start torch's intra-op pool
    before = _os_threads()
    workers = _kvflash_workers()
    q, k, v, kw = _big_ifa()
    for _ in range(3):
        IFA(q, k, v, **kw)
    args, skw = build_sfa(SfaSpec("threads_sfa", heads=16, lse=True, topk=64))
    SFA(*args, **skw)
    assert _os_threads() == before and _kvflash_workers() == workers


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


def _kvflash_workers():
    """The ids of kvflash's pool threads (named kvflash-worker by src/cpu/thread_pool.cpp)."""
    out = set()
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/comm") as f:
                if f.read().strip() == "kvflash-worker":
                    out.add(tid)
        except FileNotFoundError:
            continue
    return out


def test_kvflash_pool_workers_are_few_and_sleep(restore_threads):
    """With 3 torch threads kvflash's pool runs a call on the caller and 2 workers of its own (at
    most: an earlier test may have started more), and once the calls end they use no CPU."""
    kvflash.set_thread_pool("kvflash")
    torch.set_num_threads(3)
    q, k, v, kw = _big_ifa()
    before = _os_threads()
    for _ in range(3):
        IFA(q, k, v, **kw)
    workers = _kvflash_workers()
    assert workers and _os_threads() - before <= 2
    idle = _cpu_by_thread(lambda: time.sleep(0.05), seconds=0.4)
    assert sum(idle.get(t, 0) for t in workers) <= 0.02, idle  # one clock tick: 10 ms


@pytest.mark.parametrize("pool", POOLS)
def test_one_thread_means_one_core(restore_threads, pool):
    """With one torch thread only the calling thread works; with two, a second one joins. Shares
    of the CPU time used, not of the wall time: on a loaded machine each thread runs less."""
    kvflash.set_thread_pool(pool)
    q, k, v, kw = _big_ifa()
    main = str(threading.get_native_id())
    torch.set_num_threads(1)
    used = _cpu_by_thread(lambda: IFA(q, k, v, **kw))
    others = sum(c for t, c in used.items() if t != main)
    assert others <= 0.03 * sum(used.values()) + 0.02, used  # clock-tick granularity: 10 ms
    torch.set_num_threads(2)
    used = _cpu_by_thread(lambda: IFA(q, k, v, **kw))
    assert sum(c for t, c in used.items() if t != main) > 0.1 * sum(used.values()), used


def _every_operator():
    """One call of IFA, SFA, the indexer and FIA: a function returning their outputs."""
    q, k, v, kw = _big_ifa()
    args, skw = build_sfa(SfaSpec("threads_bits", heads=16, lse=True, topk=64))
    lq, lk, lw, lkw = build_li(q_lens=(3, 5, 2), kv_lens=(300, 500, 260), sparse_count=64,
                               return_value=True)
    fia = fia_support.build_fia(fia_support.FiaSpec("threads_fia", q_lens=(40, 17),
                                                    kv_lens=(300, 200), sparse_mode=0, lse=True))

    def run():
        return (IFA(q, k, v, **kw), *SFA(*args, **skw),
                *torch.ops.kvflash.npu_lightning_indexer(lq, lk, lw, **lkw),
                *fia_support.run(fia))
    return run


def test_same_bits_for_every_pool_and_thread_count(restore_threads):
    run = _every_operator()
    want = None
    for pool in POOLS:
        kvflash.set_thread_pool(pool)
        for n in (1, 2, 3):
            torch.set_num_threads(n)
            got = run()
            if want is None:
                want = got
            for i, (a, b) in enumerate(zip(want, got)):
                assert torch.equal(a, b), (pool, n, i)


def test_compiled_call_runs_on_the_pool_of_the_moment(restore_threads):
    """The pool is not part of a compiled graph: one graph runs on either, with the same bits."""
    q, k, v, kw = _big_ifa()

    def f(q, k, v):
        return IFA(q, k, v, **kw) * 2

    kvflash.set_thread_pool("kvflash")
    torch.set_num_threads(2)
    eager = f(q, k, v)
    torch._dynamo.reset()
    compiled = torch.compile(f, fullgraph=True)
    assert torch.equal(compiled(q, k, v), eager)
    kvflash.set_thread_pool("torch")
    assert torch.equal(compiled(q, k, v), eager)


def test_forked_child_runs_on_a_pool_of_its_own(restore_threads):
    """A child forked after kvflash's workers started has none of them; its calls start new ones
    (a call waiting on the parent's workers would never return: the child is killed after 60 s)."""
    kvflash.set_thread_pool("kvflash")
    torch.set_num_threads(2)
    q, k, v, kw = _big_ifa()
    want = IFA(q, k, v, **kw)
    pid = os.fork()
    if pid == 0:  # the child: no pytest, no exceptions past this point
        code = 1
        try:
            ok = all(torch.equal(IFA(q, k, v, **kw), want) for _ in range(3))
            code = 0 if ok and torch.ops.kvflash._num_threads() == 2 else 2
        finally:
            os._exit(code)
    deadline = time.monotonic() + 60
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("the forked child's call did not return in 60 s")
        time.sleep(0.02)
    assert os.waitstatus_to_exitcode(status) == 0


def test_vllm_path_same_bits_for_every_pool(restore_threads):
    """vllm-ascend's paged attention and FlashAttentionScore (npu_fusion_attention) run on the
    chosen pool too, with the same bits."""
    from test_vllm_ops import _pa_case
    q, kc, vc, table, ctx = _pa_case(torch.bfloat16, (700, 1300, 300))
    g = torch.Generator().manual_seed(5)
    fq = torch.randn(300, 8, 64, generator=g).to(torch.bfloat16)
    fk = torch.randn(900, 2, 64, generator=g).to(torch.bfloat16)
    fv = torch.randn(900, 2, 64, generator=g).to(torch.bfloat16)

    def run():
        out = torch.empty_like(q)
        torch_npu._npu_paged_attention(query=q, key_cache=kc, value_cache=vc, num_kv_heads=2,
                                       num_heads=8, scale_value=0.125, block_table=table,
                                       context_lens=ctx, out=out)
        fa = torch_npu.npu_fusion_attention(fq, fk, fv, 8, "TND", scale=0.125,
                                            actual_seq_qlen=[100, 300],
                                            actual_seq_kvlen=[500, 900])[0]
        return out, fa

    want = None
    for pool in POOLS:
        kvflash.set_thread_pool(pool)
        for n in (1, 3):
            torch.set_num_threads(n)
            got = run()
            want = want or got
            assert all(torch.equal(a, b) for a, b in zip(want, got)), (pool, n)
