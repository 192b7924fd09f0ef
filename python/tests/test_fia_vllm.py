"""vllm-ascend's FIA calls (docs/fia-pfa-indexer.md §4.1), end to end as written there,
through kvflash.torch_npu, every element against the float64 computation of fia_support.

The metadata is built the way vllm-ascend builds it: ``actual_seq_lengths_q =
query_start_loc[1:].tolist()`` (cumulative), ``seq_lens_list`` per request, the paged cache
``key_cache.view(num_blocks, block_size, -1)``, the causal mask ``torch.triu(torch.ones(2048,
2048), diagonal=1).to(torch.int8)``.
"""
import pytest
import torch

import kvflash.torch_npu as torch_npu
from fia_support import FiaSpec, build_fia, check

SWA_INT_MAX = 2147483647
BF16 = torch.bfloat16


def _attn_mask():
    return torch.triu(torch.ones(2048, 2048), diagonal=1).to(torch.int8)


def _paged(spec):
    """A TND case over a BnBsH cache, and vllm-ascend's names for its pieces."""
    case = build_fia(spec)
    query, key, value = case.args
    num_blocks, block_size = key.shape[0], key.shape[1]
    # vllm-ascend's cache is [num_blocks, block_size, num_kv_heads, head_size]
    key_cache = key.view(num_blocks, block_size, spec.kv_heads, spec.dim)
    value_cache = value.view(num_blocks, block_size, spec.kv_heads, spec.dv)
    query_start_loc = torch.tensor([0] + list(spec.q_lens)).cumsum(0)
    meta = dict(query=query, key_cache=key_cache, value_cache=value_cache,
                block_tables=case.kwargs["block_table"], block_size=block_size,
                actual_seq_lengths_q=query_start_loc[1:].tolist(),
                seq_lens_list=list(spec.kv_lens), num_tokens=query.shape[0])
    return case, meta


def _check(case, out, lse=None):
    problems, worst = check(case, out, lse)
    assert not problems, problems
    return worst


MIXED = dict(heads=8, kv_heads=2, dim=128, block_size=128, dtype=BF16)


@pytest.mark.parametrize("q_lens,kv_lens", [
    ((1, 1, 1, 1), (300, 129, 1, 700)),          # DecodeOnly
    ((1, 1, 37, 1, 20), (200, 5, 300, 64, 20)),  # ChunkedPrefill: decodes + prefill chunks
    ((45, 12), (45, 140)),                      # PrefillCacheHit
], ids=["decode_only", "chunked_prefill_mixed", "prefill_cache_hit"])
def test_forward_fused_infer_attention_paged(q_lens, kv_lens):
    """§4.1.2: one call for prefill, decode and chunked prefill alike (sparse_mode=3)."""
    spec = FiaSpec("va_paged_" + "_".join(map(str, q_lens)), layout="TND", paged=True,
                   mask="compressed", sparse_mode=3, q_lens=q_lens, kv_lens=kv_lens, **MIXED)
    case, m = _paged(spec)
    num_block, block_size = m["key_cache"].shape[0], m["block_size"]
    key = m["key_cache"].view(num_block, block_size, -1)
    value = m["value_cache"].view(num_block, block_size, -1)
    attn_output, _ = torch_npu.npu_fused_infer_attention_score(
        query=m["query"], key=key.contiguous(), value=value.contiguous(),
        atten_mask=_attn_mask(),
        block_table=m["block_tables"],
        input_layout="TND",
        block_size=block_size,
        actual_seq_lengths=m["actual_seq_lengths_q"],
        actual_seq_lengths_kv=m["seq_lens_list"],
        num_key_value_heads=spec.kv_heads,
        num_heads=spec.heads,
        scale=case.kwargs["scale"],
        sparse_mode=3,
    )
    attn_output = attn_output.view(m["num_tokens"], spec.heads, spec.dim)
    _check(case, attn_output)


def test_prefill_no_cache():
    """§4.1.1 PrefillNoCache: no block table, key/value the current tokens, both lengths the
    cumulative query lengths."""
    spec = FiaSpec("va_prefill_no_cache", layout="TND", mask="compressed", sparse_mode=3,
                   q_lens=(17, 40, 3), kv_lens=(17, 40, 3), kv_slack=0, **MIXED)
    case = build_fia(spec)
    query, key, value = case.args
    actual_seq_lengths_q = torch.tensor(spec.q_lens).cumsum(0).tolist()
    num_tokens = query.shape[0]
    attn_output, _ = torch_npu.npu_fused_infer_attention_score(
        query=query, key=key[:num_tokens].contiguous(), value=value[:num_tokens].contiguous(),
        atten_mask=_attn_mask(), block_table=None, input_layout="TND", block_size=128,
        actual_seq_lengths=actual_seq_lengths_q, actual_seq_lengths_kv=actual_seq_lengths_q,
        num_key_value_heads=spec.kv_heads, num_heads=spec.heads, scale=case.kwargs["scale"],
        sparse_mode=3)
    _check(case, attn_output.view(num_tokens, spec.heads, spec.dim))


def test_non_causal_and_sliding_window():
    """The variants of §4.1.2: non-causal (sparse_mode=0, no mask) and sliding window
    (sparse_mode=4, pre_tokens=window, next_tokens=0: window + 1 keys, Ascend's rule)."""
    window = 24
    for name, extra in (("va_non_causal", dict(sparse_mode=0)),
                        ("va_sliding_window", dict(sparse_mode=4, pre_tokens=window,
                                                   next_tokens=0, mask="compressed"))):
        spec = FiaSpec(name, layout="TND", paged=True, q_lens=(1, 30, 1), kv_lens=(90, 70, 9),
                       **extra, **MIXED)
        case, m = _paged(spec)
        nb, bs = m["key_cache"].shape[0], m["block_size"]
        kw = {}
        if spec.sparse_mode == 4:
            kw = dict(atten_mask=_attn_mask(), pre_tokens=window, next_tokens=0)
        out, _ = torch_npu.npu_fused_infer_attention_score(
            query=m["query"], key=m["key_cache"].view(nb, bs, -1),
            value=m["value_cache"].view(nb, bs, -1), block_table=m["block_tables"],
            input_layout="TND", block_size=bs, actual_seq_lengths=m["actual_seq_lengths_q"],
            actual_seq_lengths_kv=m["seq_lens_list"], num_key_value_heads=spec.kv_heads,
            num_heads=spec.heads, scale=case.kwargs["scale"], sparse_mode=spec.sparse_mode, **kw)
        _check(case, out)


@pytest.mark.parametrize("sliding_window", [None, 16])
@pytest.mark.parametrize("decode_only", [False, True])
def test_v2_with_learnable_sink(sliding_window, decode_only):
    """§4.1.2 sinks (gpt-oss): npu_fused_infer_attention_score_v2 with learnable_sink; DecodeOnly
    passes actual_seq_qlen as an int32 tensor (cumsum of ones)."""
    q_lens = (1, 1, 1) if decode_only else (1, 19, 6)
    spec = FiaSpec(f"va_sinks_{sliding_window}_{decode_only}", op="fia_v2", layout="TND",
                   paged=True, mask="compressed", sink=True, q_lens=q_lens, kv_lens=(50, 33, 80),
                   sparse_mode=4 if sliding_window else 3,
                   pre_tokens=sliding_window or SWA_INT_MAX, next_tokens=0,
                   **dict(MIXED, dim=64))
    case, m = _paged(spec)
    nb, bs = m["key_cache"].shape[0], m["block_size"]
    key = m["key_cache"].view(nb, bs, -1)
    value = m["value_cache"].view(nb, bs, -1)
    if decode_only:
        actual_seq_qlen = torch.tensor([1] * len(m["seq_lens_list"]), dtype=torch.int32).cumsum(
            dim=0)
    else:
        actual_seq_qlen = m["actual_seq_lengths_q"]
    out, _ = torch_npu.npu_fused_infer_attention_score_v2(
        m["query"], key.contiguous(), value.contiguous(), num_query_heads=spec.heads,
        num_key_value_heads=spec.kv_heads, input_layout="TND",
        pre_tokens=sliding_window or SWA_INT_MAX, next_tokens=0, atten_mask=_attn_mask(),
        sparse_mode=4 if sliding_window else 3, softmax_scale=case.kwargs["softmax_scale"],
        block_table=m["block_tables"], block_size=bs, actual_seq_qlen=actual_seq_qlen,
        actual_seq_kvlen=m["seq_lens_list"], learnable_sink=case.kwargs["learnable_sink"])
    _check(case, out)


def test_mla_prefill_with_rope_and_lse():
    """§4.1.5 MLA prefill: TND, no paging, both lengths cumulative, q/k nope 128 + rope 64, value
    128, softmax_lse_flag=True (the LSE [T, N, 1] feeds the chunked-context merge)."""
    spec = FiaSpec("va_mla_prefill", layout="TND", dim=128, value_dim=128, rope_dim=64, heads=8,
                   kv_heads=8, mask="compressed", sparse_mode=3, lse=True, dtype=BF16,
                   q_lens=(13, 30), kv_lens=(13, 30), kv_slack=0)
    case = build_fia(spec)
    q_nope, k_nope, value = case.args
    actual_seq_lengths_q = torch.tensor(spec.q_lens).cumsum(0).tolist()
    N = spec.heads
    out, lse = torch_npu.npu_fused_infer_attention_score(
        q_nope, k_nope.contiguous(), value.contiguous(), num_heads=N, num_key_value_heads=N,
        input_layout="TND", atten_mask=_attn_mask(), sparse_mode=3,
        scale=case.kwargs["scale"], antiquant_mode=0, antiquant_scale=None, block_table=None,
        block_size=0, softmax_lse_flag=True, actual_seq_lengths=actual_seq_lengths_q,
        actual_seq_lengths_kv=actual_seq_lengths_q.copy(), query_rope=case.kwargs["query_rope"],
        key_rope=case.kwargs["key_rope"])
    assert lse.shape == (q_nope.shape[0], N, 1)
    _check(case, out, lse)


def test_mla_decode_v2_bnsd_nbsd():
    """§4.1.5 MLA decode: v2, q [T, N, 1, 512] BNSD_NBSD (B = tokens, S = 1), the latent cache
    viewed (-1, num_kv_heads, block_size, 512) as key and value, rope 64, output [N, T, 1, 512]."""
    spec = FiaSpec("va_mla_decode", op="fia_v2", layout="BNSD", out="NBSD", dim=512,
                   rope_dim=64, heads=16, kv_heads=1, value_is_key=True, paged=True,
                   cache_bnsd=True, q_lens=(1, 1, 1, 1), kv_lens=(130, 7, 256, 64),
                   block_size=64, dtype=BF16)
    case = build_fia(spec)
    q_nope, k_cache, _ = case.args
    k_nope = k_cache.view(-1, 1, spec.block_size, 512)
    out, _ = torch_npu.npu_fused_infer_attention_score_v2(
        q_nope, k_nope, k_nope, query_rope=case.kwargs["query_rope"],
        key_rope=case.kwargs["key_rope"], num_query_heads=spec.heads, num_key_value_heads=1,
        input_layout="BNSD_NBSD", atten_mask=None, sparse_mode=0,
        softmax_scale=case.kwargs["softmax_scale"], block_table=case.kwargs["block_table"],
        block_size=spec.block_size, actual_seq_qlen=None,
        actual_seq_kvlen=list(spec.kv_lens))
    assert out.shape == (spec.heads, 4, 1, 512)
    _check(case, out)


def test_full_graph_fia_out_with_workspace():
    """§4.1.4: the workspace from _get_max_workspace, then .out(..., workspace=, out=[output,
    softmax_lse]) with a one-element softmax_lse of the query's dtype (not requested, so
    untouched)."""
    spec = FiaSpec("va_full_graph", layout="TND", paged=True, mask="compressed", sparse_mode=3,
                   q_lens=(1, 1, 9), kv_lens=(40, 300, 20), **MIXED)
    case, m = _paged(spec)
    nb, bs = m["key_cache"].shape[0], m["block_size"]
    kw = dict(query=m["query"], key=m["key_cache"].view(nb, bs, -1),
              value=m["value_cache"].view(nb, bs, -1), atten_mask=_attn_mask(),
              block_table=m["block_tables"], input_layout="TND", block_size=bs,
              actual_seq_lengths=m["actual_seq_lengths_q"],
              actual_seq_lengths_kv=m["seq_lens_list"], num_key_value_heads=spec.kv_heads,
              num_heads=spec.heads, sparse_mode=3, pre_tokens=2147483647,
              next_tokens=2147483647, scale=case.kwargs["scale"])
    workspace = torch_npu._npu_fused_infer_attention_score_get_max_workspace(**kw)
    output = torch.empty(m["num_tokens"], spec.heads, spec.dim, dtype=spec.dtype)
    softmax_lse = torch.empty(1, dtype=m["query"].dtype)
    torch_npu.npu_fused_infer_attention_score.out(**kw, workspace=workspace,
                                                  out=[output, softmax_lse])
    _check(case, output)


def test_split_decode_and_prefill_calls_match_one_call():
    """§4.1.2 (A5 chunked prefill): the decode part and the prefill part (its query offsets
    rebased to 0) as two calls give the same bits as one mixed call: results do not depend on
    the batch composition."""
    spec = FiaSpec("va_split", layout="TND", paged=True, mask="compressed", sparse_mode=3,
                   q_lens=(1, 1, 25, 7), kv_lens=(64, 9, 150, 7), **MIXED)
    case, m = _paged(spec)
    nb, bs = m["key_cache"].shape[0], m["block_size"]
    key, value = m["key_cache"].view(nb, bs, -1), m["value_cache"].view(nb, bs, -1)
    common = dict(atten_mask=_attn_mask(), input_layout="TND", block_size=bs,
                  num_key_value_heads=spec.kv_heads, num_heads=spec.heads,
                  scale=case.kwargs["scale"], sparse_mode=3)
    whole, _ = torch_npu.npu_fused_infer_attention_score(
        m["query"], key, value, block_table=m["block_tables"],
        actual_seq_lengths=m["actual_seq_lengths_q"], actual_seq_lengths_kv=m["seq_lens_list"],
        **common)
    num_decodes = 2
    dec, _ = torch_npu.npu_fused_infer_attention_score(
        m["query"][:num_decodes], key, value, block_table=m["block_tables"][:num_decodes],
        actual_seq_lengths=m["actual_seq_lengths_q"][:num_decodes],
        actual_seq_lengths_kv=m["seq_lens_list"][:num_decodes], **common)
    pre_q = [x - num_decodes for x in m["actual_seq_lengths_q"][num_decodes:]]
    pre, _ = torch_npu.npu_fused_infer_attention_score(
        m["query"][num_decodes:], key, value, block_table=m["block_tables"][num_decodes:],
        actual_seq_lengths=pre_q, actual_seq_lengths_kv=m["seq_lens_list"][num_decodes:],
        **common)
    assert torch.equal(torch.cat([dec, pre]), whole)
    _check(case, whole)

