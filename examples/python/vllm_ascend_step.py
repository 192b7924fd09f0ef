"""One attention step as vllm-ascend makes it, on the CPU, through kvflash's torch_npu operators:

1. npu_scatter_pa_kv_cache writes the step's new key / value rows into the paged caches at their
   slots (block_table[r, pos // block_size] * block_size + pos % block_size);
2. npu_fused_infer_attention_score attends a batch of two decode rows and one prefill chunk over
   those caches (TND query, cumulative query lengths, per-request KV lengths, sparse mode 3 with
   the 2048 x 2048 mask), with the softmax LSE;
3. npu_attention_update merges two partial results of the decode rows (their caches split in two,
   as context-parallel ranks hold them) into the whole-cache result;
4. npu_fusion_attention runs the encoder's prefill (TND, no mask: every position attended).

Every result is checked against a float64 computation; the script exits non-zero on a mismatch.

    python examples/python/vllm_ascend_step.py
"""
import torch

import kvflash.torch_npu as torch_npu

torch.manual_seed(0)
N, KV_N, D, BLOCK, BLOCKS = 8, 2, 64, 16, 24
G = N // KV_N


def attend(q, k, v, scale):
    """float64 attention of q [rows, N, D] over k, v [S, KV_N, D]: (out [rows, N, D], lse [rows, N])."""
    k, v = k.double().repeat_interleave(G, dim=1), v.double().repeat_interleave(G, dim=1)
    s = torch.einsum("rnd,snd->rns", q.double(), k) * scale
    return torch.einsum("rns,snd->rnd", torch.softmax(s, dim=-1), v), torch.logsumexp(s, dim=-1)


def check(name, got, want, vmax):
    """fp16 / bf16 output: within one rounding of the result plus one of the largest |V|."""
    eps = 2.0 ** -8 if got.dtype == torch.bfloat16 else 2.0 ** -10
    torch.testing.assert_close(got.double(), want, atol=eps * vmax, rtol=eps, msg=name)


# 1. The new tokens: two decode requests (1 token each) and a prefill chunk of 21 tokens.
query_lens, seq_lens = [1, 1, 21], [45, 17, 40]
T = sum(query_lens)
key_cache = torch.randn(BLOCKS, BLOCK, KV_N, D, dtype=torch.float16)
value_cache = torch.randn(BLOCKS, BLOCK, KV_N, D, dtype=torch.float16)
block_tables = torch.randperm(BLOCKS)[:9].to(torch.int32).view(3, 3)   # 3 blocks per request
positions = [p for q_len, s in zip(query_lens, seq_lens) for p in range(s - q_len, s)]
requests = [r for r, q_len in enumerate(query_lens) for _ in range(q_len)]
slots = torch.tensor([int(block_tables[r, p // BLOCK]) * BLOCK + p % BLOCK
                      for r, p in zip(requests, positions)], dtype=torch.int32)
new_k = torch.randn(T, KV_N, D, dtype=torch.float16)
new_v = torch.randn(T, KV_N, D, dtype=torch.float16)
torch_npu.npu_scatter_pa_kv_cache(new_k, new_v, key_cache, value_cache, slots, cache_mode="Norm")
for t, slot in enumerate(slots.tolist()):
    assert torch.equal(key_cache[slot // BLOCK, slot % BLOCK], new_k[t])
    assert torch.equal(value_cache[slot // BLOCK, slot % BLOCK], new_v[t])


def cache_rows(cache, r, length):
    """Request r's first `length` tokens, gathered through its block table: [length, KV_N, D]."""
    return torch.cat([cache[b] for b in block_tables[r].tolist()])[:length]


# 2. The unified attention call over the caches.
query = torch.randn(T, N, D, dtype=torch.float16)
mask = torch.triu(torch.ones(2048, 2048), diagonal=1).to(torch.int8)
out, lse = torch_npu.npu_fused_infer_attention_score(
    query=query, key=key_cache.view(BLOCKS, BLOCK, -1), value=value_cache.view(BLOCKS, BLOCK, -1),
    atten_mask=mask, block_table=block_tables, input_layout="TND", block_size=BLOCK,
    actual_seq_lengths=torch.tensor(query_lens).cumsum(0).tolist(), actual_seq_lengths_kv=seq_lens,
    num_key_value_heads=KV_N, num_heads=N, scale=D ** -0.5, sparse_mode=3, softmax_lse_flag=True)
assert out.shape == (T, N, D) and lse.shape == (T, N, 1)
row = 0
for r, (q_len, s) in enumerate(zip(query_lens, seq_lens)):
    k, v = cache_rows(key_cache, r, s), cache_rows(value_cache, r, s)
    for i in range(q_len):                      # bottom-right causal: row i sees s - q_len + i + 1
        visible = s - q_len + i + 1
        want, want_lse = attend(query[row:row + 1], k[:visible], v[:visible], D ** -0.5)
        check(f"fia row {row}", out[row:row + 1], want, v[:visible].abs().max().item())
        torch.testing.assert_close(lse[row, :, 0].double(), want_lse[0], atol=1e-4, rtol=1e-5)
        row += 1

# 3. The decode rows again, each cache split in two (context parallelism: a rank per half),
# merged by the LSE update.
parts_out, parts_lse = [], []
for half in (0, 1):
    outs, lses = [], []
    for r in (0, 1):
        s = seq_lens[r]
        cut = s // 2
        lo, hi = (0, cut) if half == 0 else (cut, s)
        k, v = cache_rows(key_cache, r, s)[lo:hi], cache_rows(value_cache, r, s)[lo:hi]
        o, l = torch_npu.npu_fused_infer_attention_score(
            query[r:r + 1].view(1, 1, N * D), k.reshape(1, hi - lo, KV_N * D),
            v.reshape(1, hi - lo, KV_N * D), num_heads=N, num_key_value_heads=KV_N,
            input_layout="BSH", scale=D ** -0.5, softmax_lse_flag=True)
        outs.append(o.view(N, D))
        lses.append(l.view(N))
    parts_out.append(torch.cat(outs).float())   # rows (request, head), fp32 partials
    parts_lse.append(torch.cat(lses))
merged, merged_lse = torch_npu.npu_attention_update(parts_lse, parts_out, 1)
for r in (0, 1):
    check(f"attention_update request {r}", merged[r * N:(r + 1) * N].to(torch.float16),
          attend(query[r:r + 1], cache_rows(key_cache, r, seq_lens[r]),
                 cache_rows(value_cache, r, seq_lens[r]), D ** -0.5)[0][0],
          cache_rows(value_cache, r, seq_lens[r]).abs().max().item())
    torch.testing.assert_close(merged_lse[r * N:(r + 1) * N].double(), lse[r, :, 0].double(),
                               atol=1e-4, rtol=1e-5)

# 4. The encoder's prefill: two sequences of 6 and 10 tokens, every position attended.
q = torch.randn(16, N, D, dtype=torch.bfloat16)
k = torch.randn(16, KV_N, D, dtype=torch.bfloat16)
v = torch.randn(16, KV_N, D, dtype=torch.bfloat16)
res = torch_npu.npu_fusion_attention(q, k, v, N, "TND", scale=D ** -0.5,
                                     actual_seq_qlen=[6, 16], actual_seq_kvlen=[6, 16])
attention_out, softmax_max, softmax_sum = res[0], res[1], res[2]
for lo, hi in ((0, 6), (6, 16)):
    want, want_lse = attend(q[lo:hi], k[lo:hi], v[lo:hi], D ** -0.5)
    check(f"fusion_attention {lo}:{hi}", attention_out[lo:hi], want, v[lo:hi].abs().max().item())
    got_lse = softmax_max[lo:hi, :, 0].double() + softmax_sum[lo:hi, :, 0].double().log()
    torch.testing.assert_close(got_lse, want_lse, atol=1e-4, rtol=1e-5)

print("vllm_ascend_step: PASS")
