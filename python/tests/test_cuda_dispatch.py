"""The CUDA dispatch key of torch.ops.kvflash.* (issue 10). Registration is checked on every
machine; running on CUDA tensors only where torch sees a GPU (scripts/gpu-check.sh), since the CI
machines have none."""
import pytest
import torch

import kvflash  # noqa: F401  (loads the operators)

OPS = ["npu_incre_flash_attention", "npu_sparse_flash_attention", "incre_flash_attention",
       "npu_scatter_pa_kv_cache", "_npu_reshape_and_cache", "_npu_paged_attention",
       "_npu_paged_attention_get_workspace", "npu_fusion_attention", "npu_attention_update"]


@pytest.mark.parametrize("name", OPS)
def test_every_op_has_a_cuda_kernel(name):
    for key in ("CPU", "CUDA", "Meta"):
        assert torch._C._dispatch_has_kernel_for_dispatch_key(f"kvflash::{name}", key), key


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_sfa_on_cuda_matches_cpu():
    """One DeepSeek-V3.2-shaped SFA call on CUDA tensors equals the CPU result within bf16
    rounding, on torch's current stream (unverified: written without a GPU)."""
    g = torch.Generator().manual_seed(0)
    b, s1, n, s2, k = 2, 1, 16, 256, 64
    q = torch.randn(b, s1, n, 512, generator=g).bfloat16()
    qr = torch.randn(b, s1, n, 64, generator=g).bfloat16()
    kv = torch.randn(b, s2, 1, 512, generator=g).bfloat16()
    kr = torch.randn(b, s2, 1, 64, generator=g).bfloat16()
    idx = torch.randint(0, s2, (b, s1, 1, k), generator=g, dtype=torch.int32)
    op = torch.ops.kvflash.npu_sparse_flash_attention

    def call(dev):
        return op(q.to(dev), kv.to(dev), kv.to(dev), idx.to(dev), 576 ** -0.5,
                  query_rope=qr.to(dev), key_rope=kr.to(dev), sparse_mode=0, attention_mode=2,
                  return_softmax_lse=True)

    cpu = call("cpu")
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        gpu = call("cuda")
    stream.synchronize()
    for c, x in zip(cpu, gpu):
        torch.testing.assert_close(x.cpu().float(), c.float(), rtol=1e-2, atol=1e-2)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_sfa_on_cuda_graph_capture_replays_the_eager_result():
    """The SFA op captured in a torch.cuda.CUDAGraph (no host sync inside the call) and replayed on
    new inputs gives the eager result bit for bit (unverified: written without a GPU)."""
    g = torch.Generator().manual_seed(1)
    b, n, s2, k = 2, 128, 512, 128
    q = torch.randn(b, 1, n, 512, generator=g).bfloat16().cuda()
    qr = torch.randn(b, 1, n, 64, generator=g).bfloat16().cuda()
    kv = torch.randn(b, s2, 1, 512, generator=g).bfloat16().cuda()
    kr = torch.randn(b, s2, 1, 64, generator=g).bfloat16().cuda()
    idx = torch.randint(0, s2, (b, 1, 1, k), generator=g, dtype=torch.int32).cuda()
    op = torch.ops.kvflash.npu_sparse_flash_attention

    def call():
        return op(q, kv, kv, idx, 576 ** -0.5, query_rope=qr, key_rope=kr, sparse_mode=0,
                  attention_mode=2)[0]

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        call()  # warm-up outside the capture (allocator, kernel attributes)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = call()
    idx.copy_(torch.randint(0, s2, (b, 1, 1, k), generator=g, dtype=torch.int32).cuda())
    graph.replay()
    torch.cuda.synchronize()
    eager = call()
    torch.cuda.synchronize()
    assert torch.equal(captured, eager)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_ifa_on_cuda_matches_cpu():
    """A Llama-3-8B-shaped decode call (GQA 32/8, BNSD, two chunks of split-KV) on CUDA tensors
    equals the CPU result within bf16 rounding, on torch's current stream (issue 9; unverified:
    written without a GPU)."""
    g = torch.Generator().manual_seed(0)
    b, n, kvn, s, d = 2, 32, 8, 700, 128
    q = torch.randn(b, n, 1, d, generator=g).bfloat16()
    k = torch.randn(b, kvn, s, d, generator=g).bfloat16()
    v = torch.randn(b, kvn, s, d, generator=g).bfloat16()
    op = torch.ops.kvflash.npu_incre_flash_attention

    def call(dev):
        return op(q.to(dev), k.to(dev), v.to(dev), num_heads=n, num_key_value_heads=kvn,
                  input_layout="BNSD", scale_value=d ** -0.5, actual_seq_lengths=[s, 513])

    cpu = call("cpu")
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        gpu = call("cuda")
    stream.synchronize()
    torch.testing.assert_close(gpu.cpu().float(), cpu.float(), rtol=1e-2, atol=1e-2)
