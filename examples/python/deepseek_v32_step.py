"""DeepSeek-V3.2's sparse attention step on the CPU, as vllm-ascend runs it, through kvflash's
torch_npu operators: npu_lightning_indexer picks each decode row's top-K cached tokens, and
npu_sparse_flash_attention attends only those, over the paged latent cache (MLA: 512 latent dims
plus 64 rope dims, 16 heads here). Both read the same block table and lengths.

The indexer is checked against its float64 scores (sum_h weights[h] * relu(q[h] . k), no scale):
every selected token is valid and distinct, and none left out scores higher than one selected
(up to the bf16 rounding of the scores). The attention is checked against float64 attention over
the selected tokens. Exits non-zero on a mismatch.

    python examples/python/deepseek_v32_step.py
"""
import torch

import kvflash.torch_npu as torch_npu

torch.manual_seed(0)
T, BLOCK, BLOCKS, K = 3, 64, 12, 64      # 3 decode requests, top 64 tokens each
LI_HEADS, LI_D, HEADS, LATENT, ROPE = 8, 128, 16, 512, 64
seq_lens = torch.tensor([200, 64, 250], dtype=torch.int32)
block_table = torch.randperm(BLOCKS).to(torch.int32).view(T, 4)
cu_q = torch.arange(1, T + 1, dtype=torch.int32)              # one query row per request


def gather(cache, r):
    """Request r's cached rows through its block table, [seq_len, ...]."""
    return torch.cat([cache[b] for b in block_table[r].tolist()])[:int(seq_lens[r])]


# The indexer.
q_li = torch.randn(T, LI_HEADS, LI_D, dtype=torch.bfloat16)
weights = torch.randn(T, LI_HEADS, dtype=torch.bfloat16)
k_li_cache = torch.randn(BLOCKS, BLOCK, 1, LI_D, dtype=torch.bfloat16)
topk, _ = torch_npu.npu_lightning_indexer(
    query=q_li, key=k_li_cache, weights=weights, actual_seq_lengths_query=cu_q,
    actual_seq_lengths_key=seq_lens, block_table=block_table, layout_query="TND",
    layout_key="PA_BSND", sparse_count=K, sparse_mode=3)
assert topk.shape == (T, 1, K) and topk.dtype == torch.int32
for r in range(T):
    keys = gather(k_li_cache, r)[:, 0].double()                           # [S, D]
    scores = (torch.relu(q_li[r].double() @ keys.T) * weights[r].double()[:, None]).sum(0)
    picked = topk[r, 0]
    valid = picked[picked >= 0].long()
    assert len(valid) == min(K, int(seq_lens[r])), f"request {r}: {len(valid)} tokens selected"
    assert (picked[len(valid):] == -1).all() and len(set(valid.tolist())) == len(valid)
    left_out = torch.ones(len(scores), dtype=torch.bool)
    left_out[valid] = False
    if left_out.any():                  # the K-th best selected beats every token left out
        slack = 2.0 ** -7 * scores.abs().max().item()
        assert scores[valid].min() >= scores[left_out].max() - slack, f"request {r}: top-k"

# The sparse attention over the selected tokens.
q = torch.randn(T, HEADS, LATENT + ROPE, dtype=torch.bfloat16)
kv_cache = torch.randn(BLOCKS, BLOCK, 1, LATENT, dtype=torch.bfloat16)
k_pe_cache = torch.randn(BLOCKS, BLOCK, 1, ROPE, dtype=torch.bfloat16)
scale = (LATENT + ROPE) ** -0.5
out, _, _ = torch_npu.npu_sparse_flash_attention(
    query=q[..., :LATENT], key=kv_cache, value=kv_cache, sparse_indices=topk, scale_value=scale,
    block_table=block_table, actual_seq_lengths_query=cu_q, actual_seq_lengths_kv=seq_lens,
    query_rope=q[..., LATENT:], key_rope=k_pe_cache, sparse_block_size=1, layout_query="TND",
    layout_kv="PA_BSND", sparse_mode=3, attention_mode=2)
assert out.shape == (T, HEADS, LATENT)
for r in range(T):
    sel = topk[r, 0][topk[r, 0] >= 0].long()
    k = torch.cat([gather(kv_cache, r)[sel, 0], gather(k_pe_cache, r)[sel, 0]], dim=-1).double()
    v = gather(kv_cache, r)[sel, 0].double()                # the value is the latent part of K
    p = torch.softmax(q[r].double() @ k.T * float(torch.tensor(scale, dtype=torch.float32)), -1)
    want = p @ v
    eps = 2.0 ** -8
    torch.testing.assert_close(out[r].double(), want, atol=eps * v.abs().max().item(), rtol=eps,
                               msg=f"sfa request {r}")

print("deepseek_v32_step: PASS")
