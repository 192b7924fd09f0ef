"""Bad arguments raise Python exceptions carrying the library's message, which names the argument:
ValueError for a bad argument (kvflash's 161001 / 161002), RuntimeError otherwise. One case per
argument and kind of fault (dtype, shape, value, layout string, device); nothing crashes."""
import pytest
import torch

import kvflash
from support import IfaSpec, SfaSpec, build_ifa, build_sfa

IFA = torch.ops.kvflash.npu_incre_flash_attention
SFA = torch.ops.kvflash.npu_sparse_flash_attention
META = torch.device("meta")


def _ifa_base(**spec):
    defaults = dict(layout="BNSD", heads=4, kv_heads=2, kvn_attr=2, lens=(5, 9), batch=2)
    defaults.update(spec)
    return build_ifa(IfaSpec("err", **defaults))


def _paged_base():
    return _ifa_base(paged=True, block_size=16)


def _int8_base():
    return _ifa_base(int8_kv="channel", antiquant_shape=2)


# (id, base, edit(q, k, v, kw) -> (q, k, v, kw), exception, words the message must contain)
IFA_CASES = [
    ("query_dtype_fp32", _ifa_base, lambda q, k, v, kw: (q.float(), k, v, kw), ValueError, ["query"]),
    ("query_dtype_fp64", _ifa_base, lambda q, k, v, kw: (q.double(), k, v, kw), ValueError,
     ["query", "float64"]),
    ("query_rank", _ifa_base, lambda q, k, v, kw: (q[:, :, 0], k, v, kw), ValueError, ["query"]),
    ("query_seq_2", _ifa_base, lambda q, k, v, kw: (q.expand(-1, -1, 2, -1), k, v, kw), ValueError,
     ["query"]),
    ("key_dtype", _ifa_base, lambda q, k, v, kw: (q, k.to(torch.bfloat16), v, kw), ValueError,
     ["key"]),
    ("key_heads", _ifa_base, lambda q, k, v, kw: (q, k[:, :1], v, kw), ValueError, ["key"]),
    ("value_shape", _ifa_base, lambda q, k, v, kw: (q, k, v[:, :, :-1], kw), ValueError, ["value"]),
    ("value_dtype_int32", _ifa_base, lambda q, k, v, kw: (q, k, v.to(torch.int32), kw), ValueError,
     ["value"]),
    ("atten_mask_dtype", _ifa_base,
     lambda q, k, v, kw: (q, k, v, dict(kw, atten_mask=torch.zeros(2, 12, dtype=torch.float16))),
     ValueError, ["atten_mask"]),
    ("atten_mask_short", _ifa_base,
     lambda q, k, v, kw: (q, k, v, dict(kw, atten_mask=torch.zeros(2, 3, dtype=torch.bool))),
     ValueError, ["atten_mask"]),
    ("pse_shift_dtype", _ifa_base,
     lambda q, k, v, kw: (q, k, v, dict(kw, pse_shift=torch.zeros(2, 4, 1, 12))), ValueError,
     ["pse_shift"]),
    ("pse_shift_rank", _ifa_base,
     lambda q, k, v, kw: (q, k, v, dict(kw, pse_shift=torch.zeros(2, 4, 12, dtype=torch.float16))),
     ValueError, ["pse_shift"]),
    ("actual_seq_lengths_too_long", _ifa_base,
     lambda q, k, v, kw: (q, k, v, dict(kw, actual_seq_lengths=[5, 99])), ValueError,
     ["actual_seq_lengths"]),
    ("actual_seq_lengths_negative", _ifa_base,
     lambda q, k, v, kw: (q, k, v, dict(kw, actual_seq_lengths=[-1, 3])), ValueError,
     ["actual_seq_lengths"]),
    ("antiquant_scale_without_int8", _ifa_base,
     lambda q, k, v, kw: (q, k, v, dict(kw, antiquant_scale=torch.ones(2, dtype=torch.float16))),
     ValueError, ["antiquant"]),
    ("antiquant_scale_dtype", _int8_base,
     lambda q, k, v, kw: (q, k, v, dict(kw, antiquant_scale=kw["antiquant_scale"].float(),
                                        antiquant_offset=None)),
     ValueError, ["antiquant_scale"]),
    ("antiquant_scale_missing", _int8_base,
     lambda q, k, v, kw: (q, k, v, dict(kw, antiquant_scale=None, antiquant_offset=None)),
     ValueError, ["antiquant_scale"]),
    ("antiquant_offset_shape", _int8_base,
     lambda q, k, v, kw: (q, k, v, dict(kw, antiquant_offset=kw["antiquant_offset"][:, :1])),
     ValueError, ["antiquant_offset"]),
    ("block_table_dtype", _paged_base,
     lambda q, k, v, kw: (q, k, v, dict(kw, block_table=kw["block_table"].long())), ValueError,
     ["block_table"]),
    ("block_table_rows", _paged_base,
     lambda q, k, v, kw: (q, k, v, dict(kw, block_table=kw["block_table"][:1])), ValueError,
     ["block_table"]),
    ("dequant_scale1_given", _ifa_base,
     lambda q, k, v, kw: (q, k, v, dict(kw, dequant_scale1=torch.ones(1))), ValueError,
     ["dequant_scale1"]),
    ("quant_scale1_given", _ifa_base,
     lambda q, k, v, kw: (q, k, v, dict(kw, quant_scale1=torch.ones(1))), ValueError,
     ["quant_scale1"]),
    ("dequant_scale2_given", _ifa_base,
     lambda q, k, v, kw: (q, k, v, dict(kw, dequant_scale2=torch.ones(1))), ValueError,
     ["dequant_scale2"]),
    ("quant_scale2_dtype", _ifa_base,
     lambda q, k, v, kw: (q, k, v, dict(kw, quant_scale2=torch.ones(1, dtype=torch.float16))),
     ValueError, ["quant_scale2"]),
    ("quant_scale2_shape", _ifa_base,
     lambda q, k, v, kw: (q, k, v, dict(kw, quant_scale2=torch.ones(7))), ValueError,
     ["quant_scale2"]),
    ("quant_offset2_without_scale", _ifa_base,
     lambda q, k, v, kw: (q, k, v, dict(kw, quant_offset2=torch.ones(1))), ValueError,
     ["quant_offset2"]),
    ("kv_padding_size_dtype", _ifa_base,
     lambda q, k, v, kw: (q, k, v, dict(kw, kv_padding_size=torch.tensor([1], dtype=torch.int32))),
     ValueError, ["kv_padding_size"]),
    ("num_heads_zero", _ifa_base, lambda q, k, v, kw: (q, k, v, dict(kw, num_heads=0)), ValueError,
     ["num_heads"]),
    ("num_heads_mismatch", _ifa_base, lambda q, k, v, kw: (q, k, v, dict(kw, num_heads=8)),
     ValueError, ["num_heads"]),
    ("num_key_value_heads", _ifa_base,
     lambda q, k, v, kw: (q, k, v, dict(kw, num_key_value_heads=3)), ValueError,
     ["num_key_value_heads"]),
    ("input_layout_string", _ifa_base, lambda q, k, v, kw: (q, k, v, dict(kw, input_layout="BHSD")),
     ValueError, ["input_layout", "BHSD"]),
    ("input_layout_lowercase", _ifa_base,
     lambda q, k, v, kw: (q, k, v, dict(kw, input_layout="bnsd")), ValueError, ["input_layout"]),
    ("block_size", _paged_base, lambda q, k, v, kw: (q, k, v, dict(kw, block_size=15)), ValueError,
     ["block_size"]),
    ("inner_precise", _ifa_base, lambda q, k, v, kw: (q, k, v, dict(kw, inner_precise=2)),
     ValueError, ["inner_precise"]),
]


@pytest.mark.parametrize("case", IFA_CASES, ids=[c[0] for c in IFA_CASES])
def test_ifa_bad_argument(case):
    _, base, edit, exc, words = case
    q, k, v, kw = edit(*base())
    with pytest.raises(exc) as info:
        IFA(q, k, v, **kw)
    message = str(info.value)
    for w in words:
        assert w in message, message
    assert "kvflash" in message or "incre_flash_attention" in message, message


def test_padding_mask_is_reserved():
    """torch_npu reserves padding_mask: any tensor is accepted and ignored."""
    q, k, v, kw = _ifa_base()
    ref = IFA(q, k, v, **kw)
    assert torch.equal(IFA(q, k, v, padding_mask=torch.full((3,), float("nan"), dtype=torch.float64),
                           **kw), ref)


IFA_TENSOR_ARGS = ["key", "value", "atten_mask", "pse_shift", "antiquant_scale",
                   "antiquant_offset", "block_table", "quant_scale2", "quant_offset2",
                   "kv_padding_size", "padding_mask"]


@pytest.mark.parametrize("name", ["query"] + IFA_TENSOR_ARGS)
def test_ifa_tensor_on_another_device(name):
    q, k, v, kw = _ifa_base(mask="BS", pse="B", int8_kv="channel", int8_out="tensor",
                            kv_padding=1, slack=4)
    if name == "block_table":
        q, k, v, kw = _paged_base()
    kw["padding_mask"] = torch.zeros(2, 12, dtype=torch.float16)
    args = {"query": q, "key": k, "value": v}
    if name in args:
        args[name] = args[name].to(META)
    else:
        kw[name] = kw[name].to(META)
    with pytest.raises(ValueError) as info:
        IFA(args["query"], args["key"], args["value"], **kw)
    # query on meta: the first CPU tensor is named instead
    assert (name if name != "query" else "key") in str(info.value), str(info.value)
    assert "meta" in str(info.value) and "cpu" in str(info.value)


def test_ifa_bad_block_id_at_run_time():
    """A block-table entry out of range is found by the run (device data): ValueError, naming it."""
    q, k, v, kw = _paged_base()
    kw["block_table"][1, 0] = 10_000
    with pytest.raises(ValueError, match=r"block_table\[1\]\[0\]"):
        IFA(q, k, v, **kw)


def test_extension_op_list_errors():
    q, k, v, kw = build_ifa(IfaSpec("err_list", list_mode=True, lens=(4, 13, 9), batch=3))
    with pytest.raises(ValueError, match=r"value\[1\]"):
        kvflash.incre_flash_attention(q, k, [v[0], v[1].double(), v[2]], **kw)
    with pytest.raises(ValueError, match="key"):
        kvflash.incre_flash_attention(q, k[:2], v[:2], **kw)
    with pytest.raises(ValueError, match="value"):  # lists of different lengths
        kvflash.incre_flash_attention(q, k, v[:2], **kw)
    with pytest.raises(ValueError, match="value"):
        kvflash.incre_flash_attention(q, k[:1], v, **kw)


# ---- SFA ----------------------------------------------------------------------------------------

def _sfa_base(**spec):
    defaults = dict(lse=True, layout_q="BSND", layout_kv="BSND")
    defaults.update(spec)
    return build_sfa(SfaSpec("err", **defaults))


def _sfa_paged():
    return _sfa_base(layout_q="TND", layout_kv="PA_BSND")


def _args(args, **repl):
    names = ["query", "key", "value", "sparse_indices", "scale_value"]
    a = dict(zip(names, args))
    a.update(repl)
    return tuple(a[n] for n in names)


SFA_CASES = [
    ("query_dtype", _sfa_base, lambda a, kw: (_args(a, query=a[0].float()), kw), ["query"]),
    ("query_head_dim", _sfa_base, lambda a, kw: (_args(a, query=a[0][..., :256]), kw), ["query"]),
    ("key_dtype", _sfa_base, lambda a, kw: (_args(a, key=a[1].to(torch.float16), value=None), kw),
     ["key"]),
    ("key_heads", _sfa_base,
     lambda a, kw: (_args(a, key=a[1].expand(-1, -1, 2, -1), value=None),
                    dict(kw, key_rope=kw["key_rope"].expand(-1, -1, 2, -1))), ["key"]),
    ("value_shape", _sfa_base, lambda a, kw: (_args(a, value=a[2][:, :-1]), kw), ["value"]),
    ("sparse_indices_dtype", _sfa_base, lambda a, kw: (_args(a, sparse_indices=a[3].long()), kw),
     ["sparse_indices"]),
    ("sparse_indices_shape", _sfa_base,
     lambda a, kw: (_args(a, sparse_indices=a[3].expand(-1, -1, 2, -1)), kw), ["sparse_indices"]),
    ("block_table_without_paging", _sfa_base,
     lambda a, kw: (a, dict(kw, block_table=torch.zeros(2, 2, dtype=torch.int32))),
     ["block_table"]),
    ("block_table_dtype", _sfa_paged,
     lambda a, kw: (a, dict(kw, block_table=kw["block_table"].long())), ["block_table"]),
    ("block_table_missing", _sfa_paged, lambda a, kw: (a, dict(kw, block_table=None)),
     ["block_table"]),
    ("actual_seq_lengths_query_dtype", _sfa_base,
     lambda a, kw: (a, dict(kw, actual_seq_lengths_query=kw["actual_seq_lengths_query"].byte())),
     ["actual_seq_lengths_query", "int32 or int64"]),
    ("actual_seq_lengths_query_missing_tnd", _sfa_paged,
     lambda a, kw: (a, dict(kw, actual_seq_lengths_query=None)), ["actual_seq_lengths_query"]),
    ("actual_seq_lengths_kv_numel", _sfa_base,
     lambda a, kw: (a, dict(kw, actual_seq_lengths_kv=kw["actual_seq_lengths_kv"][:1])),
     ["actual_seq_lengths_kv"]),
    ("actual_seq_lengths_kv_missing_paged", _sfa_paged,
     lambda a, kw: (a, dict(kw, actual_seq_lengths_kv=None)), ["actual_seq_lengths_kv"]),
    ("query_rope_missing", _sfa_base, lambda a, kw: (a, dict(kw, query_rope=None)), ["query_rope"]),
    ("query_rope_dim", _sfa_base,
     lambda a, kw: (a, dict(kw, query_rope=kw["query_rope"][..., :32])), ["query_rope"]),
    ("key_rope_missing", _sfa_base, lambda a, kw: (a, dict(kw, key_rope=None)), ["key_rope"]),
    ("key_rope_dtype", _sfa_base,
     lambda a, kw: (a, dict(kw, key_rope=kw["key_rope"].to(torch.float16))), ["key_rope"]),
    ("sparse_block_size", _sfa_base, lambda a, kw: (a, dict(kw, sparse_block_size=3)),
     ["sparse_block_size"]),
    ("layout_query_string", _sfa_base, lambda a, kw: (a, dict(kw, layout_query="BNSD")),
     ["layout_query"]),
    ("layout_kv_string", _sfa_base, lambda a, kw: (a, dict(kw, layout_kv="PA_BNSD")),
     ["layout_kv"]),
    ("layout_kv_mismatch", _sfa_base, lambda a, kw: (a, dict(kw, layout_kv="TND")), ["layout_kv"]),
    ("sparse_mode", _sfa_base, lambda a, kw: (a, dict(kw, sparse_mode=1)), ["sparse_mode"]),
    ("pre_tokens", _sfa_base, lambda a, kw: (a, dict(kw, pre_tokens=2048)), ["pre_tokens"]),
    ("next_tokens", _sfa_base, lambda a, kw: (a, dict(kw, next_tokens=0)), ["next_tokens"]),
    ("attention_mode_default", _sfa_base,
     lambda a, kw: (a, {k: v for k, v in kw.items() if k != "attention_mode"}),
     ["attention_mode"]),
    ("sinks_shape", _sfa_base, lambda a, kw: (a, dict(kw, sinks=torch.zeros(3))), ["sinks"]),
    ("sinks_dtype", _sfa_base,
     lambda a, kw: (a, dict(kw, sinks=torch.zeros(4, dtype=torch.float16))), ["sinks"]),
]


@pytest.mark.parametrize("case", SFA_CASES, ids=[c[0] for c in SFA_CASES])
def test_sfa_bad_argument(case):
    _, base, edit, words = case
    args, kw = edit(*base())
    with pytest.raises(ValueError) as info:
        SFA(*args, **kw)
    message = str(info.value)
    for w in words:
        assert w in message, message


SFA_TENSOR_ARGS = ["key", "value", "sparse_indices", "block_table", "actual_seq_lengths_query",
                   "actual_seq_lengths_kv", "query_rope", "key_rope", "sinks"]


@pytest.mark.parametrize("name", ["query"] + SFA_TENSOR_ARGS)
def test_sfa_tensor_on_another_device(name):
    args, kw = _sfa_paged() if name == "block_table" else _sfa_base(sinks=True, value="own")
    names = ["query", "key", "value", "sparse_indices"]
    if name in names:
        args = _args(args, **{name: args[names.index(name)].to(META)})
    else:
        kw[name] = kw[name].to(META)
    with pytest.raises(ValueError) as info:
        SFA(*args, **kw)
    assert (name if name != "query" else "key") in str(info.value), str(info.value)


def test_sfa_bad_block_id_at_run_time():
    args, kw = _sfa_paged()
    kw["block_table"][0, 0] = -7
    with pytest.raises(ValueError, match="block_table"):
        SFA(*args, **kw)


def test_sfa_bad_lengths_at_run_time():
    args, kw = _sfa_base()
    kw["actual_seq_lengths_kv"] = torch.tensor([40, 10_000], dtype=torch.int32)
    with pytest.raises(ValueError, match="actual_seq_lengths_kv"):
        SFA(*args, **kw)


def test_wrong_types_are_type_errors():
    """The schema itself rejects non-tensors and wrong Python types (torch's own messages)."""
    q, k, v, kw = _ifa_base()
    with pytest.raises((TypeError, RuntimeError)):
        IFA(q, k, v, num_heads="4")
    with pytest.raises((TypeError, RuntimeError)):
        IFA(q, [k], [v], **kw)
