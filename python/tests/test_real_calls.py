"""The two call shapes of vllm-ascend, end to end, with `import kvflash.torch_npu as torch_npu` as the
only change to the calling code (sizes scaled down, dtypes, layouts and strides as real)."""
import torch

import kvflash.torch_npu as torch_npu
from support import randn


def test_deepseek_v32_sparse_decode_paged_tnd():
    """vllm-ascend's DeepSeek-V3.2 decode: TND query [T, N, 512] + rope [T, N, 64] (slices of one
    projected tensor: non-contiguous), a paged latent cache [blocks, 128, 1, 512] + rope
    [blocks, 128, 1, 64] passed as both key and value, sparse_indices [T, 1, K] int32, cumulative
    query lengths, per-request KV lengths, sparse_mode 3, and the softmax max/sum for
    context-parallel decode (return_softmax_lse with a paged cache)."""
    g = torch.Generator().manual_seed(32)
    T, N, K, block = 4, 16, 256, 128          # real: N = 128 per rank, K = 2048
    kv_lens = [700, 130, 1, 300]               # 4 requests, one decode token each
    per_seq = 8
    num_blocks = 4 * per_seq + 3
    dt = torch.bfloat16
    q_proj = randn((T, N, 512 + 64), dt, g)    # q_nope absorbed + q_pe, as the model produces them
    q_nope, q_pe = q_proj[..., :512], q_proj[..., 512:]
    assert not q_nope.is_contiguous()
    kv_cache = randn((num_blocks, block, 1, 512), dt, g)
    k_pe_cache = randn((num_blocks, block, 1, 64), dt, g)
    block_table = torch.randperm(num_blocks, generator=g)[:4 * per_seq].to(torch.int32).view(4, per_seq)
    actual_seq_lengths_query = torch.arange(1, T + 1, dtype=torch.int32)   # cumulative
    actual_seq_lengths_kv = torch.tensor(kv_lens, dtype=torch.int32)
    topk = torch.full((T, 1, K), -1, dtype=torch.int32)
    for t, n in enumerate(kv_lens):
        sel = torch.randperm(n, generator=g)[:K].to(torch.int32)
        topk[t, 0, :sel.numel()] = sel
    scale = 1.0 / (192 ** 0.5)

    attn_out, softmax_max, softmax_sum = torch_npu.npu_sparse_flash_attention(
        query=q_nope, key=kv_cache, value=kv_cache, sparse_indices=topk, scale_value=scale,
        block_table=block_table, actual_seq_lengths_query=actual_seq_lengths_query,
        actual_seq_lengths_kv=actual_seq_lengths_kv, query_rope=q_pe, key_rope=k_pe_cache,
        sparse_block_size=1, layout_query="TND", layout_kv="PA_BSND", sparse_mode=3,
        attention_mode=2, return_softmax_lse=True)

    assert attn_out.shape == (T, N, 512) and attn_out.dtype == dt
    assert softmax_max.shape == (1, T, N) and softmax_sum.shape == (1, T, N)
    message = torch.ops.kvflash_testing.sfa_check(
        q_nope, kv_cache, kv_cache, topk, scale, attn_out, softmax_max, softmax_sum,
        block_table=block_table, actual_seq_lengths_query=actual_seq_lengths_query,
        actual_seq_lengths_kv=actual_seq_lengths_kv, query_rope=q_pe, key_rope=k_pe_cache,
        layout_query="TND", layout_kv="PA_BSND", sparse_mode=3, attention_mode=2,
        return_softmax_lse=True, case_name="deepseek_v32_decode")
    assert message == "", message


def test_int8_kv_cache_decode_bsh_paged():
    """vllm-ascend's int8-KV decode: BSH query [T, 1, H], an int8 paged cache
    [blocks, block_size, H_kv] for key and value, antiquant_scale [2, H_kv] fp16, a block table and
    actual_seq_lengths as a Python list."""
    g = torch.Generator().manual_seed(8)
    T, N, KVN, D, block = 3, 8, 2, 128, 128
    lens = [300, 17, 129]
    per_seq = 3
    num_blocks = 12
    q = randn((T, 1, N * D), torch.float16, g)
    k_cache = torch.randint(-128, 128, (num_blocks, block, KVN * D), generator=g, dtype=torch.int8)
    v_cache = torch.randint(-128, 128, (num_blocks, block, KVN * D), generator=g, dtype=torch.int8)
    antiquant_scale = (torch.rand(2, KVN * D, generator=g) * 0.02 + 0.002).to(torch.float16)
    block_table = torch.randperm(num_blocks, generator=g)[:T * per_seq].to(torch.int32).view(T, per_seq)
    kw = dict(antiquant_scale=antiquant_scale, block_table=block_table, actual_seq_lengths=lens,
              num_heads=N, num_key_value_heads=KVN, scale_value=D ** -0.5, input_layout="BSH",
              block_size=block)

    out = torch_npu.npu_incre_flash_attention(q, k_cache, v_cache, **kw)

    assert out.shape == q.shape and out.dtype == torch.float16
    message = torch.ops.kvflash_testing.ifa_check(q, [k_cache], [v_cache], out, None,
                                                  case_name="int8_kv_decode", **kw)
    assert message == "", message
