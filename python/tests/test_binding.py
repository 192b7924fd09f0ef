"""The binding layer: plans cached by metadata, zero copy (views in, torch-allocated outputs, the KV
cache never copied), odd inputs never crash, concurrent calls."""
import threading

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

import kvflash
from support import IfaSpec, SfaSpec, build_ifa, build_sfa

IFA = torch.ops.kvflash.npu_incre_flash_attention
SFA = torch.ops.kvflash.npu_sparse_flash_attention


def _cache_info():
    ih, im, isz, sh, sm, ssz = torch.ops.kvflash._plan_cache_info()
    return {"ifa_hits": ih, "ifa_misses": im, "ifa_plans": isz, "sfa_hits": sh, "sfa_misses": sm,
            "sfa_plans": ssz}


def test_plans_are_cached_by_metadata():
    q, k, v, kw = build_ifa(IfaSpec("cache_ifa", paged=True, heads=4, kv_heads=2, kvn_attr=2))
    torch.ops.kvflash._clear_plan_cache()
    first = IFA(q, k, v, **kw)
    for _ in range(9):  # a decode loop: same shapes, new data
        q2 = torch.randn_like(q)
        IFA(q2, k, v, **kw)
    info = _cache_info()
    assert (info["ifa_misses"], info["ifa_hits"], info["ifa_plans"]) == (1, 9, 1)
    # the cached plan computes the same result as a fresh one
    assert torch.equal(IFA(q, k, v, **kw), first)
    # new host lengths are a new plan (they are part of it, as in aclnn); strides too
    IFA(q, k, v, **dict(kw, actual_seq_lengths=[n + 1 for n in kw["actual_seq_lengths"]]))
    IFA(q.transpose(0, 2).contiguous().transpose(0, 2), k, v, **kw)
    assert _cache_info()["ifa_misses"] == 3

    args, skw = build_sfa(SfaSpec("cache_sfa", layout_q="TND", layout_kv="PA_BSND", lse=True))
    for _ in range(5):
        SFA(*args, **skw)
    info = _cache_info()
    assert (info["sfa_misses"], info["sfa_hits"]) == (1, 4)


def test_clearing_forgets_each_threads_last_plan():
    """A repeat of a thread's last call is answered without the index (plan_cache.hpp); a clear
    still makes the next call a miss, and two shapes in turn are hits of the index."""
    q, k, v, kw = build_ifa(IfaSpec("cache_clear", heads=4, kv_heads=2, kvn_attr=2))
    other = dict(kw, actual_seq_lengths=[n - 1 for n in kw["actual_seq_lengths"]])
    IFA(q, k, v, **kw)
    torch.ops.kvflash._clear_plan_cache()
    IFA(q, k, v, **kw)
    assert (_cache_info()["ifa_misses"], _cache_info()["ifa_hits"]) == (1, 0)
    IFA(q, k, v, **other)
    for _ in range(3):
        IFA(q, k, v, **kw)
        IFA(q, k, v, **other)
    info = _cache_info()
    assert (info["ifa_misses"], info["ifa_hits"], info["ifa_plans"]) == (2, 6, 2)

def test_the_kv_cache_is_never_copied():
    """Inside the operator torch allocates only the output and the workspace: far less than the
    (non-contiguous) KV cache it reads."""
    B, N, KVN, D, S = 2, 8, 2, 128, 4096
    g = torch.Generator().manual_seed(1)
    q = torch.randn(B, N, 1, D, generator=g).to(torch.bfloat16)
    kv = torch.randn(B, KVN, S, 2 * D, generator=g).to(torch.bfloat16)  # K and V side by side
    k, v = kv[..., :D], kv[..., D:]
    assert not k.is_contiguous()
    kw = dict(num_heads=N, num_key_value_heads=KVN, input_layout="BNSD", scale_value=D ** -0.5)
    IFA(q, k, v, **kw)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        out = IFA(q, k, v, **kw)
    allocated = sum(e.cpu_memory_usage for e in prof.key_averages() if e.key == "aten::empty")
    assert allocated > out.numel() * out.element_size()  # the profiler saw the allocations
    assert allocated < k.numel() * k.element_size() // 16, allocated


def test_outputs_are_new_contiguous_tensors():
    q, k, v, kw = build_ifa(IfaSpec("outputs", layout="BNSD", strided=True))
    assert not q.is_contiguous()
    out = IFA(q, k, v, **kw)
    assert out.is_contiguous() and out.data_ptr() != q.data_ptr()
    assert out.device == q.device and not out.requires_grad


def test_zero_stride_kv_is_read_in_place():
    """A broadcast (expanded, stride 0) cache is accepted as is."""
    q, k, v, kw = build_ifa(IfaSpec("expand", layout="BSND", batch=3, lens=(6, 6, 6), slack=0,
                                    pass_lengths=False))
    k0, v0 = k[:1].expand(3, -1, -1, -1), v[:1].expand(3, -1, -1, -1)
    assert k0.stride(0) == 0
    out = IFA(q, k0, v0, **kw)
    ref = IFA(q, k0.contiguous(), v0.contiguous(), **kw)
    assert torch.equal(out, ref)


@pytest.mark.parametrize("make", [
    lambda: torch.zeros([1] * 9, dtype=torch.float16),          # rank 9
    lambda: torch.zeros(0, 1, 64, dtype=torch.float16),         # empty query
    lambda: torch.zeros(2, 1, 64, dtype=torch.complex64),       # complex
    lambda: torch.zeros(2, 1, 64, dtype=torch.float16)[..., ::2],  # odd hidden size
])
def test_odd_queries_raise(make):
    q = make()
    k = torch.zeros(2, 4, 64, dtype=torch.float16)
    with pytest.raises(ValueError):
        IFA(q, k, k, num_heads=2)


def test_concurrent_calls_from_threads():
    q, k, v, kw = build_ifa(IfaSpec("threads", paged=True, heads=4, kv_heads=2, kvn_attr=2))
    ref = IFA(q, k, v, **kw)
    results, errors = [], []

    def worker():
        try:
            for _ in range(20):
                results.append(torch.equal(IFA(q, k, v, **kw), ref))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(results) == 80 and all(results)


def test_torch_npu_module_exposes_exactly_its_ops():
    import kvflash.torch_npu as torch_npu
    # IFA: kvflash's function, which turns a length tensor into the host list, then calls the op
    assert torch_npu.npu_incre_flash_attention is kvflash.npu_incre_flash_attention
    assert torch_npu.npu_sparse_flash_attention is torch.ops.kvflash.npu_sparse_flash_attention
    # PFA / FIA: kvflash's callables (length tensors as lists; FIA's .out takes out=[...])
    assert torch_npu.npu_fused_infer_attention_score is kvflash.npu_fused_infer_attention_score
    assert torch_npu.npu_prompt_flash_attention is kvflash.npu_prompt_flash_attention
    with pytest.raises(AttributeError, match="npu_flash_attention"):
        torch_npu.npu_flash_attention
    assert kvflash.__version__.count(".") == 2
