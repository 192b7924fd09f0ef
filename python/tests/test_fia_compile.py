"""torch.compile(fullgraph=True) and torch.library.opcheck with PromptFlashAttention and
FusedInferAttentionScore: a step written for Ascend (torch_npu calls: a PFA prompt, a paged FIA
call over a mixed decode + prefill batch, a v2 call with a learnable sink) compiles without a graph
break and gives eager's bits."""
import pytest
import torch

import kvflash.torch_npu as torch_npu
from fia_support import FiaSpec, build_fia

MASK = torch.triu(torch.ones(2048, 2048), diagonal=1).to(torch.int8)


def _cases():
    pfa = build_fia(FiaSpec("compile_pfa", op="pfa", layout="BSND", mask="compressed",
                            sparse_mode=3, q_lens=(6, 6), kv_lens=(6, 9)))
    fia = build_fia(FiaSpec("compile_fia", layout="TND", paged=True, mask="compressed",
                            sparse_mode=3, q_lens=(1, 7, 1), kv_lens=(30, 20, 9), lse=True))
    v2 = build_fia(FiaSpec("compile_fia_v2", op="fia_v2", layout="TND", paged=True,
                           mask="compressed", sparse_mode=4, pre_tokens=8, next_tokens=0,
                           q_lens=(1, 5), kv_lens=(40, 12), sink=True))
    return pfa, fia, v2


def step(pq, pk, pv, q, k, v, table, q_lens, kv_lens, sink):
    prompt = torch_npu.npu_prompt_flash_attention(
        pq * 1.0, pk, pv, atten_mask=MASK, actual_seq_lengths=[6, 6],
        actual_seq_lengths_kv=[6, 9], num_heads=4, num_key_value_heads=2, scale_value=0.125,
        input_layout="BSND", sparse_mode=3)
    out, lse = torch_npu.npu_fused_infer_attention_score(
        q, k, v, atten_mask=MASK, block_table=table, input_layout="TND", block_size=16,
        actual_seq_lengths=q_lens, actual_seq_lengths_kv=kv_lens, num_key_value_heads=2,
        num_heads=4, scale=0.125, sparse_mode=3, softmax_lse_flag=True)
    out2, _ = torch_npu.npu_fused_infer_attention_score_v2(
        q[:6], k, v, num_query_heads=4, num_key_value_heads=2, input_layout="TND",
        pre_tokens=8, next_tokens=0, atten_mask=MASK, sparse_mode=4, softmax_scale=0.125,
        block_table=table[:2], block_size=16, actual_seq_qlen=[1, 6],
        actual_seq_kvlen=[30, 12],
        learnable_sink=sink)
    return prompt, out, lse, out2, out.float() * 2


def _args():
    pfa, fia, v2 = _cases()
    q, k, v = fia.args
    return (*pfa.args, q, k, v, fia.kwargs["block_table"], fia.kwargs["actual_seq_lengths"],
            fia.kwargs["actual_seq_lengths_kv"], v2.kwargs["learnable_sink"])


@pytest.mark.parametrize("dynamic", [False, True])
def test_compiled_step_matches_eager(dynamic):
    torch._dynamo.reset()
    args = _args()
    eager = step(*args)
    compiled = torch.compile(step, fullgraph=True, dynamic=dynamic)
    for e, c in zip(eager, compiled(*args)):
        torch.testing.assert_close(c, e, rtol=0, atol=0, equal_nan=True)
    # another step with other host lengths (shorter: the slots past a length hold NaN)
    args2 = list(args)
    args2[8] = [n - 1 for n in args[8]]
    for e, c in zip(step(*args2), compiled(*args2)):
        torch.testing.assert_close(c, e, rtol=0, atol=0, equal_nan=True)


def test_opcheck():
    pfa, fia, v2 = _cases()
    torch.library.opcheck(torch.ops.kvflash.npu_prompt_flash_attention.default, pfa.args,
                          pfa.kwargs)
    torch.library.opcheck(torch.ops.kvflash.npu_fused_infer_attention_score.default, fia.args,
                          fia.kwargs)
    torch.library.opcheck(torch.ops.kvflash.npu_fused_infer_attention_score_v2.default, v2.args,
                          v2.kwargs)
