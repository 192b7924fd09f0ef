"""A model's attention on the CPU through kvflash's torch_npu operators
(`import kvflash.torch_npu as torch_npu`: torch_npu's exact schemas): the prefill of a prompt with
npu_prompt_flash_attention (causal, sparse mode 2 with the 2048 x 2048 mask), then decode steps
with npu_incre_flash_attention over the growing KV cache (BNSD, grouped-query attention, a batch
whose sequences have different lengths). Every output is checked against a float64 computation;
the script exits non-zero on a mismatch.

    python examples/python/decode_prefill.py
"""
import torch

import kvflash.torch_npu as torch_npu

torch.manual_seed(0)
B, N, KV_N, D, PROMPT, STEPS = 2, 8, 2, 128, 48, 3
G, SCALE = N // KV_N, D ** -0.5
prompt_lens = [48, 30]                 # sequence 1's prompt is shorter (its tail is padding)


def attend(q, k, v, causal):
    """float64 attention, q [N, Sq, D] over k, v [KV_N, Skv, D] (GQA); causal: row i sees 0..i."""
    k, v = k.double().repeat_interleave(G, 0), v.double().repeat_interleave(G, 0)
    s = q.double() @ k.transpose(1, 2) * float(torch.tensor(SCALE, dtype=torch.float32))
    if causal:
        s = s.masked_fill(torch.ones_like(s, dtype=torch.bool).triu(1), float("-inf"))
    return torch.softmax(s, dim=-1) @ v


def check(name, got, want, v):
    eps = 2.0 ** -8                      # bf16: one rounding of the result and of the largest |V|
    torch.testing.assert_close(got.double(), want, atol=eps * v.abs().max().item(), rtol=eps,
                               msg=name)


# Prefill: the prompts' queries, keys and values (BNSD), causal attention.
q = torch.randn(B, N, PROMPT, D, dtype=torch.bfloat16)
k_cache = torch.zeros(B, KV_N, PROMPT + STEPS, D, dtype=torch.bfloat16)
v_cache = torch.zeros_like(k_cache)
k_cache[:, :, :PROMPT].normal_()
v_cache[:, :, :PROMPT].normal_()
out = torch_npu.npu_prompt_flash_attention(
    q, k_cache[:, :, :PROMPT], v_cache[:, :, :PROMPT], num_heads=N, num_key_value_heads=KV_N,
    input_layout="BNSD", scale_value=SCALE, sparse_mode=2,
    atten_mask=torch.triu(torch.ones(2048, 2048), diagonal=1).to(torch.int8),
    actual_seq_lengths=prompt_lens, actual_seq_lengths_kv=prompt_lens)
for b, n in enumerate(prompt_lens):
    k, v = k_cache[b, :, :n], v_cache[b, :, :n]
    check(f"prefill batch {b}", out[b, :, :n], attend(q[b, :, :n], k, v, causal=True), v)

# Decode: each step appends one token per sequence and attends the whole cache so far.
lengths = list(prompt_lens)
for step in range(STEPS):
    for b in range(B):
        k_cache[b, :, lengths[b]].normal_()
        v_cache[b, :, lengths[b]].normal_()
        lengths[b] += 1
    q = torch.randn(B, N, 1, D, dtype=torch.bfloat16)
    out = torch_npu.npu_incre_flash_attention(
        q, k_cache, v_cache, num_heads=N, num_key_value_heads=KV_N, input_layout="BNSD",
        scale_value=SCALE, actual_seq_lengths=lengths)
    assert out.shape == q.shape
    for b, n in enumerate(lengths):
        k, v = k_cache[b, :, :n], v_cache[b, :, :n]
        check(f"decode step {step} batch {b}", out[b], attend(q[b], k, v, causal=False), v)

print("decode_prefill: PASS")
