"""npu_prompt_flash_attention, npu_fused_infer_attention_score(_v2) and their companions through
torch.ops.kvflash: every element against a float64 torch computation (fia_support.reference: the
visibility rule of each sparse mode, a masked softmax), the fake kernels against the real ones
(shapes, dtypes, strides: docs/fia-pfa-indexer.md §1.5), the .out forms and the
workspace operators."""
import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

import kvflash
import kvflash.torch_npu as torch_npu
from fia_support import FiaSpec, build_fia, check, run

BF16 = torch.bfloat16

SPECS = [
    # every query layout and output variant (non-causal, no mask)
    FiaSpec("bsh", layout="BSH"),
    FiaSpec("bsnd", layout="BSND"),
    FiaSpec("bnsd", layout="BNSD"),
    FiaSpec("tnd", layout="TND", q_slack=2),
    FiaSpec("ntd", layout="NTD"),
    FiaSpec("bnsd_bsnd", layout="BNSD", out="BSND"),
    FiaSpec("bsh_nbsd", layout="BSH", out="NBSD"),
    FiaSpec("bsnd_nbsd", layout="BSND", out="NBSD"),
    FiaSpec("bnsd_nbsd", layout="BNSD", out="NBSD", q_lens=(2, 4)),
    FiaSpec("tnd_ntd", layout="TND", out="NTD"),
    FiaSpec("ntd_tnd", layout="NTD", out="TND"),
    # padded query rows (B/S layouts) are written as 0, their LSE +inf
    FiaSpec("bsnd_q_slack_lse", layout="BSND", q_slack=2, lse=True),
    FiaSpec("bnsd_lse", layout="BNSD", lse=True, dtype=BF16),
    FiaSpec("tnd_lse", layout="TND", lse=True, q_slack=1),
    FiaSpec("ntd_tnd_lse", layout="NTD", out="TND", lse=True),
    # sparse modes (D3)
    FiaSpec("mode0_mask_band", layout="BSND", mask="full", pre_tokens=2, next_tokens=1),
    FiaSpec("mode1_mask", layout="BNSD", mask="full", sparse_mode=1),
    FiaSpec("mode2", layout="BSH", mask="compressed", sparse_mode=2, q_lens=(6, 4),
            kv_lens=(6, 9)),
    FiaSpec("mode3", layout="BSND", mask="compressed", sparse_mode=3, lse=True),
    FiaSpec("mode3_s1_gt_s2", layout="TND", mask="compressed", sparse_mode=3, q_lens=(6, 3),
            kv_lens=(3, 8), lse=True),
    FiaSpec("mode4_window", layout="TND", mask="compressed", sparse_mode=4, pre_tokens=3,
            next_tokens=0, q_lens=(5, 7), kv_lens=(9, 12)),
    FiaSpec("mode4_band", layout="BNSD", mask="compressed", sparse_mode=4, pre_tokens=2,
            next_tokens=1, dtype=BF16),
    # paged caches, GQA, decode rows
    FiaSpec("paged_bnbsh_tnd", layout="TND", paged=True, mask="compressed", sparse_mode=3,
            q_lens=(1, 6, 1), kv_lens=(17, 40, 33), heads=8, kv_heads=2),
    FiaSpec("paged_bnnbsd_bnsd", layout="BNSD", paged=True, cache_bnsd=True, q_lens=(4, 2),
            kv_lens=(30, 18)),
    FiaSpec("decode_branch_bsnd", layout="BSND", q_lens=(1, 1, 1), kv_lens=(5, 40, 17),
            sparse_mode=3, mask="compressed", heads=8, kv_heads=1),
    # int8 output, learnable sink (v2), MLA rope
    FiaSpec("int8_out", layout="BSND", int8_out=True),
    FiaSpec("v2_sink_tnd", op="fia_v2", layout="TND", sink=True, mask="compressed",
            sparse_mode=3, lse=True, dtype=BF16),
    FiaSpec("v2_sink_window", op="fia_v2", layout="TND", sink=True, mask="compressed",
            sparse_mode=4, pre_tokens=4, next_tokens=0, q_lens=(5, 1), kv_lens=(11, 8)),
    FiaSpec("mla_prefill", layout="TND", dim=128, value_dim=128, rope_dim=64, heads=4, kv_heads=4,
            mask="compressed", sparse_mode=3, lse=True, dtype=BF16, q_lens=(5, 3),
            kv_lens=(5, 3)),
    FiaSpec("mla_decode_v2", op="fia_v2", layout="BNSD", out="NBSD", dim=512, rope_dim=64,
            heads=8, kv_heads=1, value_is_key=True, paged=True, cache_bnsd=True,
            q_lens=(1, 1, 1), kv_lens=(40, 7, 66), block_size=32, dtype=BF16),
    # PromptFlashAttention: no decode branch; next_tokens defaults to 0
    FiaSpec("pfa_bsh", op="pfa", layout="BSH"),
    FiaSpec("pfa_mask_causal_band", op="pfa", layout="BSND", mask="full"),
    FiaSpec("pfa_mode3", op="pfa", layout="BNSD", mask="compressed", sparse_mode=3),
    FiaSpec("pfa_tnd", op="pfa", layout="TND", mask="compressed", sparse_mode=3),
    FiaSpec("pfa_bnsd_bsnd", op="pfa", layout="BNSD", out="BSND"),
    FiaSpec("pfa_s1_is_1", op="pfa", layout="BSND", q_lens=(1, 1), mask="compressed",
            sparse_mode=2),
    FiaSpec("pfa_int8_out", op="pfa", layout="BSND", int8_out=True, dtype=BF16),
    # int8 KV antiquant: v1's combined antiquant_* (2, ...), its split key_/value_antiquant_*,
    # v2's dequant_*; per channel, per tensor, per token (mode 1, indexed past the left padding)
    FiaSpec("aq_channel", layout="BSND", antiquant="channel", mask="compressed", sparse_mode=3),
    FiaSpec("aq_tensor", layout="BNSD", antiquant="tensor", lse=True),
    FiaSpec("aq_token_kv_pad", layout="BSH", antiquant="token", kv_pad=2, kv_slack=4),
    # (a per-channel or per-tensor key offset moves every score of a row alike: only the LSE
    # shows it)
    FiaSpec("aq_split_channel_paged", layout="TND", antiquant="channel", aq_split=True,
            paged=True, block_size=32, mask="compressed", sparse_mode=3, q_lens=(4, 6),
            kv_lens=(20, 37), lse=True),
    FiaSpec("aq_split_tensor", layout="BSND", antiquant="tensor", aq_split=True, lse=True),
    FiaSpec("aq_split_token_paged", layout="BNSD", antiquant="token", aq_split=True, paged=True,
            cache_bnsd=True, block_size=32, kv_lens=(40, 19)),
    FiaSpec("aq_decode_channel", layout="BSND", antiquant="channel", q_lens=(1, 1),
            kv_lens=(9, 30), lse=True),
    FiaSpec("v2_aq_channel", op="fia_v2", layout="TND", antiquant="channel", mask="compressed",
            sparse_mode=3, lse=True),
    FiaSpec("v2_aq_token_paged", op="fia_v2", layout="TND", antiquant="token", paged=True,
            block_size=32, q_lens=(1, 4), kv_lens=(20, 37)),
    FiaSpec("aq_decode_kv_pad_pse", layout="BSND", antiquant="channel", q_lens=(1, 1),
            kv_lens=(9, 30), kv_pad=2, kv_slack=3, pse="full", lse=True),
    # query / KV left padding (query_padding_size, kv_padding_size)
    FiaSpec("q_kv_pad", layout="BSND", q_pad=1, q_slack=3, kv_pad=2, kv_slack=4, lse=True,
            mask="compressed", sparse_mode=3),
    FiaSpec("q_pad_bnsd_nbsd", layout="BNSD", out="NBSD", q_pad=2, q_slack=2),
    FiaSpec("q_pad_past_the_tensor", layout="BSH", q_lens=(3, 6), q_pad=2, q_slack=1, lse=True),
    FiaSpec("kv_pad_mask_band", layout="BSND", kv_pad=3, kv_slack=3, mask="full", pre_tokens=3,
            next_tokens=1),
    FiaSpec("kv_pad_decode", layout="BNSD", q_lens=(1, 1), kv_pad=1, kv_slack=2),
    # shared prefix (key_shared_prefix, value_shared_prefix, actual_shared_prefix_len)
    FiaSpec("prefix_mode3", layout="BSND", prefix=4, lse=True, mask="compressed", sparse_mode=3),
    FiaSpec("prefix_mask_mode1", layout="BNSD", prefix=3, mask="full", sparse_mode=1),
    FiaSpec("prefix_decode", layout="BSH", prefix=5, q_lens=(1, 1, 1), kv_lens=(4, 9, 1)),
    # pse_shift (B, N, S1, S2) and (1, N, 1, S2), in the mask's coordinates
    FiaSpec("pse_full_mode3", layout="BSND", pse="full", mask="compressed", sparse_mode=3,
            lse=True),
    FiaSpec("pse_bcast_tnd", layout="TND", pse="bcast", lse=True),
    FiaSpec("pse_pad_prefix", layout="BNSD", pse="full", q_pad=1, q_slack=2, kv_pad=1,
            kv_slack=2, prefix=2),
    FiaSpec("v2_pse_sink", op="fia_v2", layout="BSND", pse="full", sink=True, dtype=BF16),
    FiaSpec("pfa_pse_mode3", op="pfa", layout="BSND", pse="full", mask="compressed",
            sparse_mode=3),
    FiaSpec("pfa_pse_bcast", op="pfa", layout="BNSD", pse="bcast", dtype=BF16),
]

@pytest.mark.parametrize("spec", SPECS, ids=str)
def test_values_against_float64(spec):
    case = build_fia(spec)
    out, lse = run(case)
    problems, _ = check(case, out, lse)
    assert not problems, problems


def _fake(mode, obj):
    if isinstance(obj, torch.Tensor):
        return mode.from_tensor(obj)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_fake(mode, o) for o in obj)
    if isinstance(obj, dict):
        return {k: _fake(mode, v) for k, v in obj.items()}
    return obj


def _op(spec):
    return {"pfa": torch.ops.kvflash.npu_prompt_flash_attention,
            "fia": torch.ops.kvflash.npu_fused_infer_attention_score,
            "fia_v2": torch.ops.kvflash.npu_fused_infer_attention_score_v2}[spec.op]


def _same_meta(real, fake):
    assert (fake.shape, fake.dtype, fake.stride(), fake.device) == \
        (real.shape, real.dtype, real.stride(), real.device)


@pytest.mark.parametrize("spec", SPECS, ids=str)
def test_fake_matches_real(spec):
    case = build_fia(spec)
    real = _op(spec)(*case.args, **case.kwargs)
    with FakeTensorMode() as mode:
        fargs, fkw = _fake(mode, (case.args, case.kwargs))
        fake = _op(spec)(*fargs, **fkw)
    if spec.op == "pfa":
        real, fake = [real], [fake]
    for r, f in zip(real, fake):
        _same_meta(r, f)
    if spec.op != "pfa" and not spec.lse:
        assert real[1].shape == (0,) and real[1].dtype == torch.float32


def test_output_shape_rules():
    """§1.5 written out for one shape: B=2, S1=3, N=4, KV_N=2, D=64, value D=32."""
    def shape(layout, q, v, paged=False, int8=False, **kw):
        with FakeTensorMode():
            if paged:
                kw["block_table"] = torch.zeros(2, 3, dtype=torch.int32)
            if int8:
                kw["quant_scale2"] = torch.ones(1)
            out, lse = torch.ops.kvflash.npu_fused_infer_attention_score(
                torch.empty(q, dtype=torch.float16), torch.empty(v, dtype=torch.float16),
                torch.empty(v, dtype=torch.float16), num_heads=4, num_key_value_heads=2,
                input_layout=layout, **kw)
        return tuple(out.shape), tuple(lse.shape), out.dtype
    assert shape("BSH", (2, 3, 256), (2, 9, 64)) == ((2, 3, 128), (0,), torch.float16)
    assert shape("BSND", (2, 3, 4, 64), (2, 9, 2, 32), softmax_lse_flag=True) == \
        ((2, 3, 4, 32), (2, 4, 3, 1), torch.float16)
    assert shape("BNSD_BSND", (2, 4, 3, 64), (2, 2, 9, 32)) == ((2, 3, 4, 32), (0,),
                                                                 torch.float16)
    assert shape("BNSD_NBSD", (2, 4, 3, 64), (2, 2, 9, 32), softmax_lse_flag=True) == \
        ((4, 2, 3, 32), (2, 4, 3, 1), torch.float16)
    assert shape("TND_NTD", (7, 4, 64), (9, 2, 32), softmax_lse_flag=True) == \
        ((4, 7, 32), (7, 4, 1), torch.float16)
    assert shape("NTD_TND", (4, 7, 64), (2, 9, 32), softmax_lse_flag=True) == \
        ((7, 4, 32), (7, 4, 1), torch.float16)
    # paged: value rank 3 (BnBsH) size(2) / KV_N, rank 4 (BnNBsD) size(3)
    assert shape("TND", (7, 4, 64), (10, 16, 64), paged=True)[0] == (7, 4, 32)
    assert shape("BNSD", (2, 4, 3, 64), (10, 2, 16, 32), paged=True)[0] == (2, 4, 3, 32)
    # int8 output with quant_scale2
    assert shape("BSND", (2, 3, 4, 64), (2, 9, 2, 64), int8=True)[2] == torch.int8


def test_v2_refuses_what_kvflash_has_no_meaning_for():
    case = build_fia(FiaSpec("v2_refused", op="fia_v2", layout="TND"))
    for name, value in (("out_dtype", 1), ("query_dtype", 27), ("quant_scale_p",
                                                                 torch.ones(1))):
        with pytest.raises(ValueError, match=name):
            torch_npu.npu_fused_infer_attention_score_v2(*case.args, **case.kwargs,
                                                         **{name: value})


def test_out_form_and_workspace():
    """vllm-ascend's graph path (§4.1.4): _get_max_workspace, then .out(workspace=, out=[out,
    lse]) with a dummy lse when the LSE is not requested (left untouched, D7)."""
    for lse in (False, True):
        case = build_fia(FiaSpec(f"out_form_{lse}", layout="TND", paged=True, mask="compressed",
                                 sparse_mode=3, q_lens=(1, 5), kv_lens=(20, 37), lse=lse))
        want, want_lse = run(case)
        ws = torch_npu._npu_fused_infer_attention_score_get_max_workspace(*case.args,
                                                                          **case.kwargs)
        assert ws.dtype == torch.uint8 and ws.dim() == 1
        out = torch.full_like(want, float("nan"))
        soft = torch.full_like(want_lse, -5.0) if lse else torch.empty(1, dtype=want.dtype).fill_(7)
        before = soft.clone()
        got = torch_npu.npu_fused_infer_attention_score.out(*case.args, **case.kwargs,
                                                            workspace=ws, out=[out, soft])
        assert got[0] is out and got[1] is soft
        assert torch.equal(out, want)
        if lse:
            assert torch.equal(soft, want_lse)
        else:
            assert torch.equal(soft, before)
        # without a workspace, or with one too small, the run takes its own
        out2 = torch.empty_like(want)
        torch.ops.kvflash.npu_fused_infer_attention_score.out(
            *case.args, **case.kwargs, workspace=torch.empty(0, dtype=torch.uint8),
            attention_out=out2, softmax_lse=soft)
        assert torch.equal(out2, want)


def test_v2_out_form_and_workspace():
    case = build_fia(FiaSpec("v2_out_form", op="fia_v2", layout="TND", sink=True,
                             mask="compressed", sparse_mode=3, lse=True))
    want, want_lse = run(case)
    ws = torch_npu._npu_fused_infer_attention_score_v2_get_max_workspace(*case.args,
                                                                         **case.kwargs)
    out, soft = torch.empty_like(want), torch.empty_like(want_lse)
    torch_npu.npu_fused_infer_attention_score_v2.out(*case.args, **case.kwargs, workspace=ws,
                                                     out=[out, soft])
    assert torch.equal(out, want) and torch.equal(soft, want_lse)


def test_workspace_fake_matches_real():
    case = build_fia(FiaSpec("ws_fake", layout="TND", paged=True, q_lens=(1, 5),
                             kv_lens=(20, 37)))
    op = torch.ops.kvflash._npu_fused_infer_attention_score_get_max_workspace
    real = op(*case.args, **case.kwargs)
    with FakeTensorMode() as mode:
        fargs, fkw = _fake(mode, (case.args, case.kwargs))
        fake = op(*fargs, **fkw)
    _same_meta(real, fake)


def test_length_tensors_are_read_as_lists():
    """vllm-ascend passes int tensors for SymInt[] (actual_seq_qlen = tensor([1]*B).cumsum(0))."""
    case = build_fia(FiaSpec("len_tensors", op="fia_v2", layout="TND", q_lens=(1, 1, 1),
                             kv_lens=(9, 4, 13), paged=True, sink=True))
    want, _ = run(case)
    kw = dict(case.kwargs)
    kw["actual_seq_qlen"] = torch.tensor([1] * 3, dtype=torch.int32).cumsum(dim=0)
    kw["actual_seq_kvlen"] = torch.tensor(kw["actual_seq_kvlen"])
    got, _ = torch_npu.npu_fused_infer_attention_score_v2(*case.args, **kw)
    assert torch.equal(got, want)
    with pytest.raises(ValueError, match="actual_seq_kvlen"):
        torch_npu.npu_fused_infer_attention_score_v2(
            *case.args, **dict(kw, actual_seq_kvlen=torch.ones(3)))


def test_plan_cache_hits():
    torch.ops.kvflash._clear_plan_cache()
    case = build_fia(FiaSpec("cache_hits", layout="BSND"))
    for _ in range(3):
        run(case)
    pfa_h, pfa_m, pfa_n, fia_h, fia_m, fia_n = torch.ops.kvflash._fia_plan_cache_info()
    assert (fia_h, fia_m, fia_n) == (2, 1, 1) and (pfa_h, pfa_m, pfa_n) == (0, 0, 0)


def test_deterministic_across_thread_counts():
    case = build_fia(FiaSpec("threads", layout="TND", paged=True, mask="compressed",
                             sparse_mode=3, q_lens=(1, 37, 1, 20), kv_lens=(70, 90, 5, 64),
                             heads=8, kv_heads=2, lse=True))
    threads = torch.get_num_threads()
    try:
        results = []
        for t in (1, 2, 3):
            torch.set_num_threads(t)
            results.append(run(case))
    finally:
        torch.set_num_threads(threads)
    for out, lse in results[1:]:
        assert torch.equal(out, results[0][0]) and torch.equal(lse, results[0][1])


def _v1_names(case):
    """The call's arguments in FIA v1's names (the check's schema is v1's), and whether it is
    PFA."""
    kw = dict(case.kwargs)
    renames = {"num_query_heads": "num_heads", "softmax_scale": "scale",
               "actual_seq_qlen": "actual_seq_lengths", "actual_seq_kvlen": "actual_seq_lengths_kv",
               "return_softmax_lse": "softmax_lse_flag", "quant_scale_out": "quant_scale2",
               "quant_offset_out": "quant_offset2", "scale_value": "scale",
               "dequant_scale_key": "key_antiquant_scale",
               "dequant_offset_key": "key_antiquant_offset",
               "dequant_scale_value": "value_antiquant_scale",
               "dequant_offset_value": "value_antiquant_offset",
               "key_quant_mode": "key_antiquant_mode", "value_quant_mode": "value_antiquant_mode"}
    kw = {renames.get(k, k): v for k, v in kw.items()}
    if case.spec.op == "pfa":
        kw.setdefault("next_tokens", 0)  # PFA's default
    return kw


@pytest.mark.parametrize("spec", SPECS, ids=str)
def test_outputs_against_the_cpp_oracle(spec):
    """The same outputs through the project's fp64 oracle and comparator
    (torch.ops.kvflash_testing.fia_check: reference/fia_reference.hpp, every element)."""
    case = build_fia(spec)
    out, lse = run(case)
    kw = _v1_names(case)
    q, k, v = case.args
    verdict = torch.ops.kvflash_testing.fia_check(
        q, k, v, out, lse, prompt=spec.op == "pfa", case_name=spec.name,
        allow_mostly_empty=True, **kw)
    assert verdict == "", verdict


def test_both_checks_catch_a_wrong_element():
    case = build_fia(FiaSpec("wrong_element", layout="TND", lse=True))
    out, lse = run(case)
    bad = out.clone()
    bad[3, 1, 5] += 0.25
    assert check(case, bad, lse, record=False)[0]
    q, k, v = case.args
    assert torch.ops.kvflash_testing.fia_check(q, k, v, bad, lse, case_name="wrong_element",
                                               **_v1_names(case))
    bad_lse = lse.clone()
    bad_lse[2, 0, 0] += 0.01
    assert check(case, out, bad_lse, record=False)[0]
