"""npu_incre_flash_attention (and the kvflash extension op) against the C++ double-precision
reference, on a generated sweep that passes every keyword of the schema and leaves each one at its
default in other cases."""
import itertools
import random

import pytest
import torch

from support import IfaSpec, build_ifa, check_ifa, run_ifa

F16, BF16 = torch.float16, torch.bfloat16


def _explicit_cases():
    return [
        # every keyword at its default: q, k, v only (num_heads=1, scale 1.0, BSH, ...)
        IfaSpec("defaults_only", heads=1, kv_heads=1, dim=32, lens=(7, 7), slack=0,
                pass_lengths=False, pass_heads=False, pass_layout=False, pass_scale=False),
        IfaSpec("bsh_gqa_lengths", layout="BSH", heads=8, kv_heads=2, lens=(3, 17), kvn_attr=2),
        IfaSpec("bsnd_bf16_mha_kvn0", layout="BSND", dtype=BF16, heads=4, kv_heads=4, kvn_attr=0,
                lens=(11, 4)),
        IfaSpec("bnsd_broadcast_length", layout="BNSD", lens=(9, 9), broadcast_length=True,
                heads=4, kv_heads=1, kvn_attr=1),
        IfaSpec("bsh_no_lengths", lens=(12, 12), slack=0, pass_lengths=False, heads=2, kv_heads=2),
        IfaSpec("bsh_mask_bool_BS", mask="BS", lens=(20, 33)),
        IfaSpec("bsnd_mask_int8_B11S", layout="BSND", mask="B11S", mask_dtype=torch.int8,
                lens=(20, 7)),
        IfaSpec("bnsd_mask_uint8_BN1S", layout="BNSD", mask="BN1S", mask_dtype=torch.uint8,
                heads=4, kv_heads=2, kvn_attr=2, lens=(15, 30)),
        IfaSpec("bnsd_mask_1N1S_B1S", layout="BNSD", mask="1N1S", lens=(15, 30)),
        IfaSpec("bsh_mask_B1S", mask="B1S", lens=(15, 30)),
        IfaSpec("bsh_mask_111S", mask="111S", lens=(15, 30)),
        IfaSpec("bsh_pse_batch", pse="B", lens=(6, 25)),
        IfaSpec("bnsd_pse_broadcast_mask", layout="BNSD", pse="1", mask="BS", lens=(6, 25)),
        IfaSpec("bsh_paged", paged=True, block_size=16, lens=(5, 40), heads=8, kv_heads=2,
                kvn_attr=2),
        IfaSpec("bsnd_paged_bf16", layout="BSND", dtype=BF16, paged=True, block_size=32,
                lens=(33, 64)),
        IfaSpec("bnsd_paged_cache_bnsd", layout="BNSD", paged=True, cache_bnsd=True,
                block_size=16, lens=(17, 3), heads=4, kv_heads=2, kvn_attr=2),
        IfaSpec("bsh_paged_int8_channel", paged=True, block_size=32, int8_kv="channel",
                antiquant_shape=3, lens=(31, 70), heads=4, kv_heads=2, kvn_attr=2),
        IfaSpec("bnsd_int8_channel_shape0", layout="BNSD", int8_kv="channel", antiquant_shape=0,
                lens=(9, 21), heads=4, kv_heads=2, kvn_attr=2),
        IfaSpec("bsnd_int8_channel_shape1_bf16", layout="BSND", dtype=BF16, int8_kv="channel",
                antiquant_shape=1, lens=(9, 21)),
        IfaSpec("bsh_int8_channel_shape2_nooffset", int8_kv="channel", antiquant_shape=2,
                antiquant_offset=False, lens=(9, 21)),
        IfaSpec("bsh_int8_tensor", int8_kv="tensor", lens=(14, 3)),
        IfaSpec("bsh_out_int8_tensor", int8_out="tensor", lens=(14, 23)),
        IfaSpec("bnsd_out_int8_channel", layout="BNSD", int8_out="channel", lens=(14, 23)),
        IfaSpec("bsh_out_int8_channel_nooffset_kv_int8", int8_out="channel", quant_offset=False,
                int8_kv="tensor", lens=(14, 23)),
        IfaSpec("bsh_left_padding", kv_padding=3, lens=(5, 9), slack=6),
        IfaSpec("bnsd_left_padding_mask_pse", layout="BNSD", kv_padding=2, lens=(5, 9), slack=6,
                mask="BS", pse="B"),
        IfaSpec("bsh_list_mode", list_mode=True, lens=(4, 13, 9), batch=3),
        IfaSpec("bnsd_list_mode_gqa", layout="BNSD", list_mode=True, lens=(4, 13), heads=4,
                kv_heads=2, kvn_attr=2),
        IfaSpec("bsh_strided_views", strided=True, lens=(8, 19)),
        IfaSpec("bnsd_strided_views_bf16", layout="BNSD", dtype=BF16, strided=True, lens=(8, 19)),
        IfaSpec("inner_precise_0", inner_precise=0, lens=(8, 19)),
        IfaSpec("inner_precise_1", inner_precise=1, lens=(8, 19)),
        IfaSpec("padding_mask_reserved", padding_mask=True, lens=(8, 19)),
        IfaSpec("ext_lse", lse=True, lens=(8, 0), allow_mostly_empty=True),
        IfaSpec("ext_lse_paged_bnsd", layout="BNSD", lse=True, paged=True, lens=(40, 7),
                heads=4, kv_heads=2, kvn_attr=2),
        IfaSpec("ext_zero_fully_masked", lse=True, zero_masked=True, mask="BS",
                mask_full_row=True, lens=(10, 12), batch=2, allow_mostly_empty=True),
        IfaSpec("fully_masked_mean_of_v", mask="BS", mask_full_row=True, lens=(10, 12)),
        IfaSpec("empty_batch_int8_out", int8_out="tensor", lens=(0, 12), allow_mostly_empty=True),
    ]


def _generated_cases(count=24):
    """A seeded random walk over the feature space (valid combinations only)."""
    rnd = random.Random(2026)
    cases = []
    for i in range(count):
        layout = rnd.choice(["BSH", "BSND", "BNSD"])
        dtype = rnd.choice([F16, BF16])
        kvh = rnd.choice([1, 2, 4])
        heads = kvh * rnd.choice([1, 2, 4])
        dim = rnd.choice([32, 64, 128])
        batch = rnd.choice([1, 2, 3])
        lens = tuple(rnd.randint(1, 60) for _ in range(batch))
        paged = rnd.random() < 0.35
        int8_kv = rnd.choice([None, None, "channel", "tensor"])
        spec = IfaSpec(
            f"gen{i:02d}", layout=layout, dtype=dtype, batch=batch, heads=heads, kv_heads=kvh,
            dim=dim, lens=lens, kvn_attr=kvh, paged=paged,
            cache_bnsd=paged and layout == "BNSD" and rnd.random() < 0.5,
            block_size=rnd.choice([32, 64]) if paged else 16,
            mask=rnd.choice([None, "BS", "B11S", "1N1S"]),
            mask_dtype=rnd.choice([torch.bool, torch.int8, torch.uint8]),
            pse=rnd.choice([None, "B", "1"]),
            int8_kv=int8_kv, antiquant_shape=rnd.randint(0, 3),
            int8_out=rnd.choice([None, None, "tensor", "channel"]),
            strided=not paged and rnd.random() < 0.4,
            lse=rnd.random() < 0.3, seed=i)
        cases.append(spec)
    return cases


CASES = _explicit_cases() + _generated_cases()


@pytest.mark.parametrize("spec", CASES, ids=str)
def test_matches_reference(spec):
    out, lse, q, k, v, kw = run_ifa(spec)
    assert out.shape == q.shape
    assert out.is_contiguous()
    assert out.dtype == (torch.int8 if "quant_scale2" in kw else q.dtype)
    message = check_ifa(spec, out, lse, q, k, v, kw)
    assert message == "", message


# The schema's keywords (all keyword-only arguments).
IFA_KEYWORDS = [a.name for a in torch.ops.kvflash.npu_incre_flash_attention.default._schema.arguments
                if a.kwarg_only]


def test_sweep_passes_and_omits_every_keyword():
    passed = {name: 0 for name in IFA_KEYWORDS}
    omitted = {name: 0 for name in IFA_KEYWORDS}
    for spec in CASES:
        if spec.list_mode or spec.lse or spec.zero_masked:
            continue  # the extension op
        _, _, _, kw = build_ifa(spec)
        for name in IFA_KEYWORDS:
            (passed if name in kw else omitted)[name] += 1
    # dequant_scale1 / quant_scale1 / dequant_scale2 must be None (IFA has no int8 query): they are
    # passed only by the error tests (test_errors.py).
    must_be_none = {"dequant_scale1", "quant_scale1", "dequant_scale2"}
    assert [n for n, c in passed.items() if c == 0 and n not in must_be_none] == []
    assert [n for n, c in omitted.items() if c == 0] == []


def test_extension_op_list_form_equals_npu_op_per_batch():
    """The tensor-list form gives each batch the result of a one-batch call on its own tensor."""
    spec = IfaSpec("list_vs_single", layout="BSND", list_mode=True, lens=(4, 13, 9), batch=3,
                   heads=4, kv_heads=2, kvn_attr=2)
    q, k, v, kw = build_ifa(spec)
    out, _ = torch.ops.kvflash.incre_flash_attention(q, k, v, **kw)
    for b in range(3):
        kwb = dict(kw, actual_seq_lengths=[kw["actual_seq_lengths"][b]])
        ob = torch.ops.kvflash.npu_incre_flash_attention(q[b:b + 1], k[b], v[b], **kwb)
        assert torch.equal(out[b:b + 1], ob)


def test_lse_and_zero_rows_do_not_change_the_npu_result():
    spec = IfaSpec("ext_same_bits", mask="BS", lens=(10, 12), heads=4, kv_heads=2, kvn_attr=2)
    q, k, v, kw = build_ifa(spec)
    ref = torch.ops.kvflash.npu_incre_flash_attention(q, k, v, **kw)
    out, lse = torch.ops.kvflash.incre_flash_attention(q, [k], [v], return_softmax_lse=True, **kw)
    assert torch.equal(out, ref)
    assert lse.shape == (2, 4) and lse.dtype == torch.float32
    out0, lse0 = torch.ops.kvflash.incre_flash_attention(q, [k], [v], **kw)
    assert torch.equal(out0, ref) and lse0.shape == (0,)


@pytest.mark.parametrize("layout", ["BSH", "BSND", "BNSD"])
def test_results_do_not_depend_on_strides(layout):
    """Zero copy: a strided query and KV cache give exactly the bits of contiguous ones."""
    spec = IfaSpec(f"strides_{layout}", layout=layout, lens=(8, 19), heads=4, kv_heads=2,
                   kvn_attr=2)
    q, k, v, kw = build_ifa(spec)
    contiguous = torch.ops.kvflash.npu_incre_flash_attention(q, k, v, **kw)
    strided = torch.ops.kvflash.npu_incre_flash_attention(
        *(t.transpose(0, -1).contiguous().transpose(0, -1) for t in (q, k, v)), **kw)
    assert torch.equal(contiguous, strided)


def test_every_combination_of_layout_and_dtype_pair():
    """(query, KV, output) dtype combinations of docs/semantics.md §2.2 on each layout."""
    combos = [(F16, None, None), (BF16, None, None), (F16, None, "tensor"),
              (F16, "channel", None), (F16, "channel", "tensor"), (BF16, "channel", None),
              (BF16, "tensor", "channel"), (BF16, None, "channel")]
    for (dtype, kv, out), layout in itertools.product(combos, ["BSH", "BSND", "BNSD"]):
        spec = IfaSpec(f"combo_{layout}_{dtype}_{kv}_{out}".replace("torch.", ""),
                       layout=layout, dtype=dtype, int8_kv=kv, int8_out=out, lens=(9, 14))
        out_t, lse, q, k, v, kw = run_ifa(spec)
        message = check_ifa(spec, out_t, lse, q, k, v, kw)
        assert message == "", message


def test_the_reference_check_sees_one_wrong_element():
    """Negative control: the comparator is not vacuous."""
    spec = IfaSpec("negative_control", lens=(8, 19))
    out, lse, q, k, v, kw = run_ifa(spec)
    out[1, 0, 5] += 0.05
    message = check_ifa(spec, out, lse, q, k, v, kw)
    assert "1 of 512 output elements out of tolerance" in message, message
