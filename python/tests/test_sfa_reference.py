"""npu_sparse_flash_attention against the C++ double-precision reference, on a generated sweep that
passes every keyword of the schema and leaves each one at its default in other cases."""
import random

import pytest
import torch

from support import SfaSpec, build_sfa, check_sfa, run_sfa

F16, BF16 = torch.float16, torch.bfloat16


def _explicit_cases():
    return [
        SfaSpec("bsnd_bsnd_defaults", pass_sbs=False, sparse_mode=None, lse=None,
                pass_q_lens=False, pass_kv_lens=False, q_lens=(3, 3), bad_indices=False),
        SfaSpec("bsnd_bsnd_fp16_lse", dtype=F16, lse=True, pass_tokens=True),
        SfaSpec("bsnd_bsnd_value_none", value="none", lse=False),
        SfaSpec("bsnd_bsnd_value_own", value="own", sparse_mode=0),
        SfaSpec("bsnd_bsnd_sinks", sinks=True, lse=True),
        SfaSpec("bsnd_bsnd_sbs4", sbs=4, topk=8),
        SfaSpec("tnd_tnd", layout_q="TND", layout_kv="TND", q_lens=(2, 3), kv_lens=(40, 70),
                lse=True),
        SfaSpec("tnd_tnd_mode0_sinks_fp16", layout_q="TND", layout_kv="TND", dtype=F16,
                sparse_mode=0, sinks=True, lse=True),
        SfaSpec("bsnd_pa", layout_kv="PA_BSND", block_size=32, lse=True),
        SfaSpec("tnd_pa_lse_context_parallel", layout_q="TND", layout_kv="PA_BSND",
                block_size=64, lse=True, heads=16, q_lens=(1, 1, 2), kv_lens=(100, 7, 130),
                batch=3, topk=64),
        SfaSpec("tnd_pa_sbs16", layout_q="TND", layout_kv="PA_BSND", block_size=32, sbs=16,
                topk=6, kv_lens=(90, 41)),
        SfaSpec("bsnd_pa_value_own", layout_kv="PA_BSND", value="own", sinks=True, lse=True),
        SfaSpec("bsnd_contiguous_query", strided_q=False, heads=8, lse=True),
        SfaSpec("bsnd_one_head", heads=1, topk=16),
        SfaSpec("bsnd_uncovered_rows", q_lens=(1, 4), lse=True),
        SfaSpec("mode3_more_queries_than_kv", q_lens=(4, 2), kv_lens=(2, 30), lse=True,
                allow_mostly_empty=True),
    ]


def _generated_cases(count=16):
    rnd = random.Random(7)
    cases = []
    for i in range(count):
        layout_q = rnd.choice(["BSND", "TND"])
        layout_kv = rnd.choice([layout_q, "PA_BSND"])
        batch = rnd.choice([1, 2, 3])
        sbs = rnd.choice([1, 1, 2, 8])
        block_size = rnd.choice([16, 32, 64])
        kv_lens = tuple(rnd.randint(8, 150) for _ in range(batch))
        q_lens = tuple(rnd.randint(1, 3) for _ in range(batch))
        cases.append(SfaSpec(
            f"gen{i:02d}", layout_q=layout_q, layout_kv=layout_kv, batch=batch,
            dtype=rnd.choice([F16, BF16]), heads=rnd.choice([1, 2, 4, 8, 16]),
            q_lens=q_lens, kv_lens=kv_lens, topk=rnd.choice([4, 16, 48]), sbs=sbs,
            sparse_mode=rnd.choice([0, 3]), sinks=rnd.random() < 0.4,
            lse=rnd.choice([True, False]), value=rnd.choice(["same", "none", "own"]),
            block_size=max(block_size, sbs), strided_q=rnd.random() < 0.7, seed=i))
    return cases


CASES = _explicit_cases() + _generated_cases()


@pytest.mark.parametrize("spec", CASES, ids=str)
def test_matches_reference(spec):
    out, args, kw = run_sfa(spec)
    q = args[0]
    attention_out, softmax_max, softmax_sum = out
    assert attention_out.shape == q.shape and attention_out.dtype == q.dtype
    assert attention_out.is_contiguous()
    if kw.get("return_softmax_lse"):
        n = q.shape[-2]
        want = (1, q.shape[0], n) if spec.layout_q == "TND" else (q.shape[0], 1, q.shape[1], n)
        assert softmax_max.shape == want and softmax_sum.shape == want
        assert softmax_max.dtype == torch.float32
    else:
        assert softmax_max.shape == (0,) and softmax_sum.shape == (0,)
    message = check_sfa(spec, out, args, kw)
    assert message == "", message


SFA_KEYWORDS = [a.name for a in
                torch.ops.kvflash.npu_sparse_flash_attention.default._schema.arguments
                if a.kwarg_only]


def test_sweep_passes_and_omits_every_keyword():
    passed = {name: 0 for name in SFA_KEYWORDS}
    omitted = {name: 0 for name in SFA_KEYWORDS}
    for spec in CASES:
        _, kw = build_sfa(spec)
        for name in SFA_KEYWORDS:
            (passed if name in kw else omitted)[name] += 1
    assert [n for n, c in passed.items() if c == 0] == []
    # attention_mode must be 2 (its default 0 is refused, test_errors.py); query_rope/key_rope are
    # required with it; layout_query is passed by every case here, layout_kv defaults to BSND.
    required = {"attention_mode", "query_rope", "key_rope", "layout_query", "layout_kv"}
    assert [n for n, c in omitted.items() if c == 0 and n not in required] == []


def test_layout_defaults_are_bsnd():
    spec = SfaSpec("layout_defaults", lse=True)
    args, kw = build_sfa(spec)
    explicit = torch.ops.kvflash.npu_sparse_flash_attention(*args, **kw)
    del kw["layout_query"], kw["layout_kv"]
    implicit = torch.ops.kvflash.npu_sparse_flash_attention(*args, **kw)
    for a, b in zip(explicit, implicit):
        assert torch.equal(a, b)


def test_value_none_and_value_is_key_agree():
    spec = SfaSpec("value_none_vs_key", lse=True)
    args, kw = build_sfa(spec)
    with_key = torch.ops.kvflash.npu_sparse_flash_attention(*args, **kw)
    args = (args[0], args[1], None) + args[3:]
    without = torch.ops.kvflash.npu_sparse_flash_attention(*args, **kw)
    for a, b in zip(with_key, without):
        assert torch.equal(a, b)


def test_the_reference_check_sees_one_wrong_element():
    """Negative control: the comparator is not vacuous."""
    spec = SfaSpec("negative_control", lse=True)
    out, args, kw = run_sfa(spec)
    out[0][0, 1, 2, 7] += 0.1
    message = check_sfa(spec, out, args, kw)
    assert "1 elements out of tolerance" in message, message
