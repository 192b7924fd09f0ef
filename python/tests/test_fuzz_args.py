"""Property-based fuzzing of the PyTorch operators' argument handling (hypothesis).

Each test starts from a valid call of one operator (torch.ops.kvflash.npu_incre_flash_attention
and npu_sparse_flash_attention, which kvflash.torch_npu re-exports; kvflash.incre_flash_attention;
torch.ops.kvflash.merge_attention_states) and breaks one or two of its arguments: None, another
dtype, one dim more or fewer, a dim one longer or shorter, an empty or non-contiguous tensor,
another Python type, an out-of-range attribute. A call either succeeds (some changes are legal:
a strided input, a uint8 mask) or raises ValueError / TypeError / RuntimeError whose message
names the argument (a dtype, None, type or attribute change: that argument; a shape change: an
argument of the call, as the message names the pair that disagrees). Anything else, or a crash of
the process, fails. The examples are derandomised and bounded (about 20 s on two cores).
"""
import math

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kvflash
import kvflash.distributed as kd
import kvflash.torch_npu as torch_npu
from support import IfaSpec, SfaSpec, build_ifa, build_li, build_sfa

ACCEPTED = (ValueError, TypeError, RuntimeError)
EXAMPLES = 120
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

DTYPES = [torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int8, torch.uint8,
          torch.int32, torch.int64, torch.bool, torch.complex64]
INTS = [-(2 ** 63), -(2 ** 31), -5, -1, 0, 1, 2, 3, 7, 64, 2 ** 31, 2 ** 63 - 1]
FLOATS = [math.nan, math.inf, -math.inf, 0.0, -1.0, 1e-30, 1e30]
STRINGS = ["", "BSH", "BNSD", "BSND", "TND", "PA_BSND", "bsh", "BSH ", "XYZ", "N"]
WRONG_TYPES = ["query", 3, 1.5, [1, 2], (4,)]
# Names the library's messages use for a torch argument, besides the argument's own.
ALIASES = {"out_dtype": ["out"], "input_layout": ["layout"]}
TENSOR_KINDS = ["none", "dtype", "rank_up", "rank_down", "longer", "shorter", "empty",
                "strided", "type"]
SCALAR_KINDS = ["none", "value", "type"]
NAME_KINDS = {"none", "dtype", "type", "value"}


def _longer(t, dim):
    return torch.cat([t, t.narrow(dim, 0, 1)], dim)


def _strided(t):
    """The same values in a view whose last dim has stride 2 (not contiguous)."""
    if t.dim() == 0:
        return t
    wide = torch.zeros(*t.shape[:-1], 2 * t.shape[-1], dtype=t.dtype)
    view = wide[..., ::2]
    view.copy_(t)
    return view


def _mutate_tensor(t, kind, data):
    if kind == "none":
        return None
    if kind == "type":
        return data.draw(st.sampled_from(WRONG_TYPES))
    if not isinstance(t, torch.Tensor):
        return t
    dims = t.dim()
    dim = data.draw(st.integers(0, max(dims - 1, 0)))
    if kind == "dtype":
        dtype = data.draw(st.sampled_from(DTYPES))
        return t.to(dtype) if dtype != torch.complex64 else t.to(torch.float32).to(dtype)
    if kind == "rank_up":
        return t.unsqueeze(0)
    if kind == "rank_down":
        if dims == 0:
            return t.reshape(1)
        if t.shape[dim] > 0:
            return t.select(dim, 0)
        return torch.zeros(t.shape[:dim] + t.shape[dim + 1:], dtype=t.dtype)
    if kind == "longer":
        return _longer(t, dim) if dims > 0 and t.shape[dim] > 0 else t
    if kind == "shorter":
        return t.narrow(dim, 0, t.shape[dim] - 1) if dims > 0 and t.shape[dim] > 0 else t
    if kind == "empty":
        return t.narrow(dim, 0, 0) if dims > 0 else t.reshape(0)
    if kind == "strided":
        return _strided(t)
    raise AssertionError(kind)


def _mutate_scalar(value, kind, data):
    if kind == "none":
        return None
    if kind == "type":
        return data.draw(st.sampled_from([torch.zeros(2), [1.0], "x" if not isinstance(value, str)
                                          else 1]))
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return data.draw(st.sampled_from(INTS))
    if isinstance(value, float):
        return data.draw(st.sampled_from(FLOATS))
    if isinstance(value, str):
        return data.draw(st.sampled_from(STRINGS))
    if isinstance(value, torch.dtype):
        return data.draw(st.sampled_from(DTYPES))
    return value


def _fuzz_call(data, call, pos_names, pos, kw, extra_names=(), reinterpreting=()):
    """Breaks one or two arguments of call(*pos, **kw) and checks the outcome. pos_names names the
    positional arguments; extra_names are optional keyword arguments the base call leaves out.
    A change to an argument of `reinterpreting` (one that says how the tensors' shapes are read:
    FIA's input_layout, KV heads, block_table) is judged as a shape change: the message may name
    the tensor whose shape no longer fits."""
    names = list(pos_names) + list(kw) + [n for n in extra_names if n not in kw]
    pos, kw = list(pos), dict(kw)
    changed = []
    for _ in range(data.draw(st.integers(1, 2))):
        name = data.draw(st.sampled_from(names))
        current = pos[pos_names.index(name)] if name in pos_names else kw.get(name)
        is_tensor = isinstance(current, (torch.Tensor, list)) or current is None
        if isinstance(current, list) and current and not isinstance(current[0], torch.Tensor):
            is_tensor = False  # an int list (actual_seq_lengths)
        kind = data.draw(st.sampled_from(TENSOR_KINDS if is_tensor else SCALAR_KINDS))
        if current is None and kind not in ("none", "type"):
            continue  # an absent optional tensor: only its presence can change, below
        if isinstance(current, list) and is_tensor and current:
            new = [_mutate_tensor(current[0], kind, data)] + current[1:]
            if kind == "none":
                new = None
        elif is_tensor:
            new = _mutate_tensor(current, kind, data)
        else:
            new = _mutate_scalar(current, kind, data)
        if name in pos_names:
            pos[pos_names.index(name)] = new
        else:
            kw[name] = new
        changed.append((name, kind))
    if not changed:
        return
    note = ", ".join(f"{n}:{k}" for n, k in changed)
    try:
        call(*pos, **kw)
    except ACCEPTED as e:
        message = str(e)
        if all(kind in NAME_KINDS and n not in reinterpreting for n, kind in changed):
            wanted = [w for n, _ in changed for w in [n] + ALIASES.get(n, [])]
        else:
            wanted = [w for n in names for w in [n] + ALIASES.get(n, [])]
        assert any(w in message for w in wanted), (
            f"{note}: the {type(e).__name__} does not name {wanted}: {message}")
    except Exception as e:  # noqa: BLE001 - the point of the test
        pytest.fail(f"{note}: {type(e).__name__} is not ValueError/TypeError/RuntimeError: {e}")


IFA_OPTIONAL = ["padding_mask", "atten_mask", "pse_shift", "actual_seq_lengths",
                "antiquant_scale", "antiquant_offset", "block_table", "dequant_scale1",
                "quant_scale1", "dequant_scale2", "quant_scale2", "quant_offset2",
                "kv_padding_size", "num_heads", "scale_value", "input_layout",
                "num_key_value_heads", "block_size", "inner_precise"]


def _ifa_base(paged):
    spec = IfaSpec("fuzz", layout="BNSD", heads=4, kv_heads=2, kvn_attr=2, lens=(5, 9), batch=2,
                   mask="B11S", paged=paged, block_size=16)
    return build_ifa(spec)


@pytest.mark.parametrize("paged", [False, True], ids=["dense", "paged"])
@pytest.mark.parametrize("entry", ["torch.ops", "torch_npu"])
@FUZZ
@given(data=st.data())
def test_npu_incre_flash_attention_bad_arguments(data, entry, paged):
    q, k, v, kw = _ifa_base(paged)
    op = (torch.ops.kvflash.npu_incre_flash_attention if entry == "torch.ops"
          else torch_npu.npu_incre_flash_attention)
    _fuzz_call(data, op, ["query", "key", "value"], [q, k, v], kw, IFA_OPTIONAL)


@FUZZ
@given(data=st.data())
def test_incre_flash_attention_extension_bad_arguments(data):
    q, k, v, kw = _ifa_base(False)
    kw = dict(kw, return_softmax_lse=True, zero_fully_masked_rows=False)
    _fuzz_call(data, kvflash.incre_flash_attention, ["query", "key", "value"], [q, [k], [v]], kw,
               IFA_OPTIONAL)


SFA_OPTIONAL = ["block_table", "actual_seq_lengths_query", "actual_seq_lengths_kv", "query_rope",
                "key_rope", "sparse_block_size", "layout_query", "layout_kv", "sparse_mode",
                "pre_tokens", "next_tokens", "attention_mode", "return_softmax_lse", "sinks"]


@pytest.mark.parametrize("layout_kv", ["BSND", "PA_BSND"])
@pytest.mark.parametrize("entry", ["torch.ops", "torch_npu"])
@FUZZ
@given(data=st.data())
def test_npu_sparse_flash_attention_bad_arguments(data, entry, layout_kv):
    args, kw = build_sfa(SfaSpec("fuzz", layout_kv=layout_kv, sinks=True, lse=True))
    op = (torch.ops.kvflash.npu_sparse_flash_attention if entry == "torch.ops"
          else torch_npu.npu_sparse_flash_attention)
    _fuzz_call(data, op, ["query", "key", "value", "sparse_indices", "scale_value"], args, kw,
               SFA_OPTIONAL)


LI_OPTIONAL = ["actual_seq_lengths_query", "actual_seq_lengths_key", "block_table",
               "layout_query", "layout_key", "sparse_count", "sparse_mode", "pre_tokens",
               "next_tokens", "return_value"]


@pytest.mark.parametrize("layouts", [("TND", "PA_BSND"), ("BSND", "BSND")], ids="_".join)
@FUZZ
@given(data=st.data())
def test_npu_lightning_indexer_bad_arguments(data, layouts):
    q, k, w, kw = build_li(*layouts, return_value=True)
    _fuzz_call(data, torch_npu.npu_lightning_indexer, ["query", "key", "weights"], [q, k, w], kw,
               LI_OPTIONAL)


LI_SCORES_OPTIONAL = [n for n in LI_OPTIONAL if n != "return_value"]


def _li_scores_base(layouts):
    q, k, w, kw = build_li(*layouts)
    kw.pop("return_value")
    return q, k, w, kw


@pytest.mark.parametrize("layouts", [("TND", "PA_BSND"), ("BSND", "BSND")], ids="_".join)
@FUZZ
@given(data=st.data())
def test_lightning_indexer_scores_bad_arguments(data, layouts):
    q, k, w, kw = _li_scores_base(layouts)
    _fuzz_call(data, torch.ops.kvflash.lightning_indexer_scores, ["query", "key", "weights"],
               [q, k, w], kw, LI_SCORES_OPTIONAL)


def _li_cp_base(layouts):
    q, k, w, kw = build_li(*layouts, return_value=True)
    if layouts[1] == "PA_BSND":
        return q, k, w, dict(kw, sharding=kd.RoundRobinBlocks())
    return q, k, w, dict(kw, sharding=kd.ContiguousShards([0, k.shape[1]]))


@pytest.mark.parametrize("layouts", [("TND", "PA_BSND"), ("BSND", "BSND")], ids="_".join)
@FUZZ
@given(data=st.data())
def test_context_parallel_lightning_indexer_bad_arguments(one_rank, data, layouts):
    q, k, w, kw = _li_cp_base(layouts)
    _fuzz_call(data, kd.context_parallel_lightning_indexer, ["query", "key", "weights"],
               [q, k, w], kw, LI_OPTIONAL + ["sharding"])


@pytest.mark.parametrize("form", ["lse", "max_sum"])
@FUZZ
@given(data=st.data())
def test_merge_attention_states_bad_arguments(data, form):
    g = torch.Generator().manual_seed(3)
    parts, rows, dim = 3, (2, 4), 16
    partial_out = torch.randn(parts, *rows, dim, generator=g, dtype=torch.float32)
    if form == "lse":
        pos = [partial_out, torch.randn(parts, *rows, generator=g)]
        kw = dict(out_dtype=torch.float16)
    else:
        pos = [partial_out, None]
        kw = dict(partial_max=torch.randn(parts, *rows, generator=g),
                  partial_sum=torch.rand(parts, *rows, generator=g) + 1, out_dtype=torch.bfloat16)
    kw["sink"] = torch.randn(*rows, generator=g)
    _fuzz_call(data, torch.ops.kvflash.merge_attention_states, ["partial_out", "partial_lse"],
               pos, kw, ["partial_max", "partial_sum", "sink", "out_dtype"])


def test_the_fuzzed_base_calls_are_valid():
    """The starting points are valid calls, so a refusal above comes from the broken argument."""
    for paged in (False, True):
        q, k, v, kw = _ifa_base(paged)
        torch.ops.kvflash.npu_incre_flash_attention(q, k, v, **kw)
        kvflash.incre_flash_attention(q, [k], [v], return_softmax_lse=True, **kw)
    for layout_kv in ("BSND", "PA_BSND"):
        args, kw = build_sfa(SfaSpec("fuzz", layout_kv=layout_kv, sinks=True, lse=True))
        torch.ops.kvflash.npu_sparse_flash_attention(*args, **kw)
    for layouts in (("TND", "PA_BSND"), ("BSND", "BSND")):
        q, k, w, kw = build_li(*layouts, return_value=True)
        torch_npu.npu_lightning_indexer(q, k, w, **kw)
        q, k, w, kw = _li_scores_base(layouts)
        torch.ops.kvflash.lightning_indexer_scores(q, k, w, **kw)
    po = torch.randn(3, 2, 4, 16)
    torch.ops.kvflash.merge_attention_states(po, torch.randn(3, 2, 4), sink=torch.randn(2, 4),
                                             out_dtype=torch.float16)
    torch.ops.kvflash.merge_attention_states(po, None, partial_max=torch.randn(3, 2, 4),
                                             partial_sum=torch.rand(3, 2, 4) + 1,
                                             sink=torch.randn(2, 4), out_dtype=torch.bfloat16)


# ---- PromptFlashAttention / FusedInferAttentionScore ----------------------------------------------
# The library names FiaArgs's members (FIA v1's names); PFA and v2 call some of them otherwise.
ALIASES.update({
    "num_query_heads": ["num_heads"], "softmax_scale": ["scale"],
    "actual_seq_qlen": ["actual_seq_lengths"], "actual_seq_kvlen": ["actual_seq_lengths_kv"],
    "return_softmax_lse": ["softmax_lse_flag", "softmax_lse"],
    "softmax_lse_flag": ["softmax_lse"], "quant_scale_out": ["quant_scale2"],
    "quant_offset_out": ["quant_offset2"], "deq_scale1": ["dequant_scale1"],
    "deq_scale2": ["dequant_scale2"], "scale_value": ["scale"],
    "key_quant_mode": ["key_antiquant_mode"], "value_quant_mode": ["value_antiquant_mode"],
    "dequant_scale_key": ["key_antiquant_scale"], "dequant_offset_key": ["key_antiquant_offset"],
    "dequant_scale_value": ["value_antiquant_scale"],
    "dequant_offset_value": ["value_antiquant_offset"],
})

FIA_OPTIONAL = ["pse_shift", "atten_mask", "actual_seq_lengths", "actual_seq_lengths_kv",
                "quant_scale2", "quant_offset2", "antiquant_scale", "key_antiquant_scale",
                "block_table", "query_padding_size", "kv_padding_size", "key_shared_prefix",
                "query_rope", "key_rope", "num_heads", "scale", "pre_tokens", "next_tokens",
                "input_layout", "num_key_value_heads", "sparse_mode", "inner_precise",
                "block_size", "antiquant_mode", "softmax_lse_flag"]
FIA_V2_OPTIONAL = ["query_rope", "key_rope", "pse_shift", "atten_mask", "actual_seq_qlen",
                   "actual_seq_kvlen", "block_table", "quant_scale_out", "learnable_sink",
                   "num_query_heads", "num_key_value_heads", "softmax_scale", "pre_tokens",
                   "next_tokens", "input_layout", "sparse_mode", "block_size", "inner_precise",
                   "return_softmax_lse", "out_dtype", "query_dtype"]
PFA_OPTIONAL = ["padding_mask", "atten_mask", "pse_shift", "actual_seq_lengths",
                "quant_scale2", "quant_offset2", "num_heads", "scale_value", "pre_tokens",
                "next_tokens", "input_layout", "num_key_value_heads", "actual_seq_lengths_kv",
                "sparse_mode"]


# FIA's arguments that say how the tensors' shapes are read.
FIA_REINTERPRETING = {"input_layout", "num_heads", "num_query_heads", "num_key_value_heads",
                      "block_table", "block_size"}


def _fia_base(op, paged):
    from fia_support import FiaSpec, build_fia
    spec = FiaSpec(f"fuzz_{op}_{paged}", op=op, layout="TND" if op != "pfa" else "BSND",
                   paged=paged, mask="compressed", sparse_mode=3, q_lens=(1, 4),
                   kv_lens=(9, 20), lse=op != "pfa", sink=op == "fia_v2")
    case = build_fia(spec)
    return list(case.args), dict(case.kwargs)


@pytest.mark.parametrize("paged", [False, True], ids=["dense", "paged"])
@pytest.mark.parametrize("entry", ["torch.ops", "torch_npu"])
@FUZZ
@given(data=st.data())
def test_npu_fused_infer_attention_score_bad_arguments(data, entry, paged):
    pos, kw = _fia_base("fia", paged)
    op = (torch.ops.kvflash.npu_fused_infer_attention_score if entry == "torch.ops"
          else torch_npu.npu_fused_infer_attention_score)
    _fuzz_call(data, op, ["query", "key", "value"], pos, kw, FIA_OPTIONAL, FIA_REINTERPRETING)


@pytest.mark.parametrize("paged", [False, True], ids=["dense", "paged"])
@FUZZ
@given(data=st.data())
def test_npu_fused_infer_attention_score_v2_bad_arguments(data, paged):
    pos, kw = _fia_base("fia_v2", paged)
    _fuzz_call(data, torch_npu.npu_fused_infer_attention_score_v2, ["query", "key", "value"],
               pos, kw, FIA_V2_OPTIONAL, FIA_REINTERPRETING)


@FUZZ
@given(data=st.data())
def test_npu_prompt_flash_attention_bad_arguments(data):
    pos, kw = _fia_base("pfa", False)
    _fuzz_call(data, torch_npu.npu_prompt_flash_attention, ["query", "key", "value"], pos, kw,
               PFA_OPTIONAL, FIA_REINTERPRETING)


def test_the_fuzzed_fia_base_calls_are_valid():
    for op in ("fia", "fia_v2"):
        for paged in (False, True):
            pos, kw = _fia_base(op, paged)
            fn = (torch_npu.npu_fused_infer_attention_score if op == "fia"
                  else torch_npu.npu_fused_infer_attention_score_v2)
            fn(*pos, **kw)
    pos, kw = _fia_base("pfa", False)
    torch_npu.npu_prompt_flash_attention(*pos, **kw)


# The features the base calls above leave out (int8 KV antiquant, left padding, a shared prefix,
# pse_shift), each fuzzed from a valid call of its own.
FIA_FEATURES = {
    "antiquant_channel": dict(op="fia", antiquant="channel"),
    "antiquant_split_token": dict(op="fia", antiquant="token", aq_split=True),
    "v2_dequant_token_paged": dict(op="fia_v2", antiquant="token", paged=True, block_size=32),
    "left_padding": dict(op="fia", q_pad=1, q_slack=2, kv_pad=1, kv_slack=3),
    "shared_prefix": dict(op="fia", prefix=3, kv_slack=0),
    "pse": dict(op="fia", layout="BNSD", pse="full"),
    "v2_pse": dict(op="fia_v2", pse="full"),
    "pfa_pse": dict(op="pfa", pse="bcast"),
}
FUZZ_FEATURE = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _fia_feature(feature):
    from fia_support import FiaSpec, build_fia
    spec = FiaSpec(f"fuzz_{feature}", **dict(dict(layout="BSND", mask="compressed",
                                                  sparse_mode=3), **FIA_FEATURES[feature]))
    case = build_fia(spec)
    fn = {"fia": torch_npu.npu_fused_infer_attention_score,
          "fia_v2": torch_npu.npu_fused_infer_attention_score_v2,
          "pfa": torch_npu.npu_prompt_flash_attention}[spec.op]
    return fn, list(case.args), dict(case.kwargs)


@pytest.mark.parametrize("feature", sorted(FIA_FEATURES))
@FUZZ_FEATURE
@given(data=st.data())
def test_fia_feature_bad_arguments(data, feature):
    fn, pos, kw = _fia_feature(feature)
    _fuzz_call(data, fn, ["query", "key", "value"], pos, kw, (), FIA_REINTERPRETING)


def test_the_fuzzed_fia_feature_calls_are_valid():
    for feature in FIA_FEATURES:
        fn, pos, kw = _fia_feature(feature)
        fn(*pos, **kw)


# One bad value of each feature's arguments: a ValueError naming the argument (v2's dequant_*
# are named by the library's member, key_/value_antiquant_*).
FIA_FEATURE_BAD = [
    ("antiquant_channel", "antiquant_scale", lambda t: t.double(), "antiquant_scale"),
    ("antiquant_channel", "antiquant_offset", lambda t: t[:, :1], "antiquant_offset"),
    ("antiquant_split_token", "key_antiquant_scale", lambda t: t[..., :2], "key_antiquant_scale"),
    ("antiquant_split_token", "value_antiquant_offset", lambda t: t.half(),
     "value_antiquant_offset"),
    ("v2_dequant_token_paged", "dequant_scale_value", lambda t: t[..., :3],
     "value_antiquant_scale|dequant_scale_value"),
    ("left_padding", "query_padding_size", lambda t: t.int(), "query_padding_size"),
    ("left_padding", "kv_padding_size", lambda t: t[:0], "kv_padding_size"),
    ("shared_prefix", "key_shared_prefix", lambda t: t[0], "key_shared_prefix"),
    ("shared_prefix", "value_shared_prefix", lambda t: t.float(), "value_shared_prefix"),
    ("shared_prefix", "actual_shared_prefix_len", lambda v: [100], "actual_shared_prefix_len"),
    ("pse", "pse_shift", lambda t: t.double(), "pse_shift"),
    ("v2_pse", "pse_shift", lambda t: t[..., :2], "pse_shift"),
    ("pfa_pse", "pse_shift", lambda t: t[:, :1], "pse_shift"),
]


@pytest.mark.parametrize("feature,name,bad,match", FIA_FEATURE_BAD,
                         ids=[f"{f}-{n}" for f, n, _, _ in FIA_FEATURE_BAD])
def test_fia_feature_bad_value_names_the_argument(feature, name, bad, match):
    fn, pos, kw = _fia_feature(feature)
    kw[name] = bad(kw[name])
    with pytest.raises(ValueError, match=match):
        fn(*pos, **kw)


def test_fia_undefined_combinations_name_the_arguments():
    """Per-token antiquant and MLA rope with a shared prefix are not defined upstream: refused
    (docs/fia-semantics.md), naming both arguments."""
    from fia_support import FiaSpec, build_fia
    fn, pos, kw = _fia_feature("antiquant_split_token")
    _, _, prefix = _fia_feature("shared_prefix")
    for name in ("key_shared_prefix", "value_shared_prefix"):
        kw[name] = torch.zeros(prefix[name].shape, dtype=torch.int8)
    kw["actual_shared_prefix_len"] = prefix["actual_shared_prefix_len"]
    with pytest.raises(ValueError, match="key_antiquant_scale per-token.*key_shared_prefix"):
        fn(*pos, **kw)
    case = build_fia(FiaSpec("rope_prefix", layout="BSND", dim=128, rope_dim=64, heads=4,
                             kv_heads=4, mask="compressed", sparse_mode=3,
                             dtype=torch.bfloat16))
    kw = dict(case.kwargs)
    kw["key_shared_prefix"] = torch.zeros((1, 3, 4, 128), dtype=torch.bfloat16)
    kw["value_shared_prefix"] = torch.zeros((1, 3, 4, 128), dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="key_shared_prefix with query_rope"):
        torch_npu.npu_fused_infer_attention_score(*case.args, **kw)
