"""The operator schemas, string for string, against torch_npu 2.14.0's (from its native-functions
yaml, namespace `npu`; kvflash registers them in `kvflash`)."""
import pytest
import torch

# The lines of the issue, verbatim.
TORCH_NPU_IFA = 'npu_incre_flash_attention(Tensor query, Tensor key, Tensor value, *, Tensor? padding_mask=None, Tensor? atten_mask=None, Tensor? pse_shift=None, SymInt[]? actual_seq_lengths=None, Tensor? antiquant_scale=None, Tensor? antiquant_offset=None, Tensor? block_table=None, Tensor? dequant_scale1=None, Tensor? quant_scale1=None, Tensor? dequant_scale2=None, Tensor? quant_scale2=None, Tensor? quant_offset2=None, Tensor? kv_padding_size=None, int num_heads=1, float scale_value=1.0, str input_layout="BSH", int num_key_value_heads=0, int block_size=0, int inner_precise=1) -> Tensor'  # noqa: E501
TORCH_NPU_SFA = 'npu_sparse_flash_attention(Tensor query, Tensor key, Tensor? value, Tensor sparse_indices, float scale_value, *, Tensor? block_table=None, Tensor? actual_seq_lengths_query=None, Tensor? actual_seq_lengths_kv=None, Tensor? query_rope=None, Tensor? key_rope=None, int sparse_block_size=1, str layout_query="BSND", str layout_kv="BSND", int sparse_mode=3, int pre_tokens=9223372036854775807, int next_tokens=9223372036854775807, int attention_mode=0, bool return_softmax_lse=False, Tensor? sinks=None) -> (Tensor, Tensor, Tensor)'  # noqa: E501

# torch_npu's npu_lightning_indexer (op-plugin 7.3.0 and master), verbatim.
TORCH_NPU_LI = 'npu_lightning_indexer(Tensor query, Tensor key, Tensor weights, *, Tensor? actual_seq_lengths_query=None, Tensor? actual_seq_lengths_key=None, Tensor? block_table=None, str layout_query="BSND", str layout_key="BSND", int sparse_count=2048, int sparse_mode=3, int pre_tokens=9223372036854775807, int next_tokens=9223372036854775807, bool return_value=False) -> (Tensor, Tensor)'  # noqa: E501

# vllm-ascend's attention path (docs/python.md): torch_npu 2.14.0's native-functions yaml for the
# first three, verbatim; ATB's three as op-plugin declares them (ReshapeAndCachAtb.cpp, the
# signatures libop_plugin_atb.so exports, vllm-ascend's keyword calls).
TORCH_NPU_SCATTER = "npu_scatter_pa_kv_cache(Tensor key, Tensor value, Tensor(a!) key_cache, Tensor(b!) value_cache, Tensor slot_mapping, *, Tensor? compress_lens=None, Tensor? compress_seq_offsets=None, Tensor? seq_lens=None, str? cache_mode='PA_NZ') -> ()"  # noqa: E501
TORCH_NPU_FA = 'npu_fusion_attention(Tensor query, Tensor key, Tensor value, int head_num, str input_layout, Tensor? pse=None, Tensor? padding_mask=None, Tensor? atten_mask=None, float scale=1., float keep_prob=1., int pre_tockens=2147483647, int next_tockens=2147483647, int inner_precise=0, int[]? prefix=None, int[]? actual_seq_qlen=None, int[]? actual_seq_kvlen=None, int sparse_mode=0, bool gen_mask_parallel=True, bool sync=False, str softmax_layout="", Tensor? sink=None, Tensor? dropout_mask=None, int seed=0, int offset=0) -> (Tensor, Tensor, Tensor, Tensor, int, int, int)'  # noqa: E501
TORCH_NPU_UPDATE = "npu_attention_update(Tensor[] lse, Tensor[] local_out, int update_type) -> (Tensor, Tensor)"  # noqa: E501
ATB_RESHAPE_AND_CACHE = "_npu_reshape_and_cache(Tensor key, Tensor value, Tensor(a!) key_cache, Tensor(b!) value_cache, Tensor slot_indices) -> ()"  # noqa: E501
ATB_PAGED_ATTENTION = "_npu_paged_attention(Tensor query, Tensor key_cache, Tensor value_cache, int num_kv_heads, int num_heads, float scale_value, Tensor block_table, Tensor context_lens, Tensor(a!) out, *, Tensor? workspace=None) -> ()"  # noqa: E501
ATB_PAGED_ATTENTION_WORKSPACE = "_npu_paged_attention_get_workspace(Tensor query, Tensor key_cache, Tensor value_cache, int num_kv_heads, int num_heads, float scale_value, Tensor block_table, Tensor context_lens, Tensor(a!) out) -> Tensor"  # noqa: E501


def _registered(name):
    return getattr(torch.ops.kvflash, name).default._schema


def _check(line):
    name = line.split("(", 1)[0]
    schema = _registered(name)
    # torch prints a float default 1.0 as "1." and a string default in double quotes; those are
    # the only differences its printer makes
    printed = line.replace("float scale_value=1.0", "float scale_value=1.")
    assert str(schema) == "kvflash::" + printed.replace("'PA_NZ'", '"PA_NZ"')
    # and the same schema as torch parses the line (names, types, defaults, keyword-only)
    assert schema == torch._C.parse_schema("kvflash::" + line)


def test_incre_flash_attention_schema():
    _check(TORCH_NPU_IFA)


def test_sparse_flash_attention_schema():
    _check(TORCH_NPU_SFA)


def test_lightning_indexer_schema():
    _check(TORCH_NPU_LI)


@pytest.mark.parametrize("line", [TORCH_NPU_SCATTER, TORCH_NPU_FA, TORCH_NPU_UPDATE,
                                  ATB_RESHAPE_AND_CACHE, ATB_PAGED_ATTENTION,
                                  ATB_PAGED_ATTENTION_WORKSPACE],
                         ids=lambda line: line.split("(", 1)[0])
def test_vllm_ascend_path_schemas(line):
    _check(line)


def test_extension_op_keeps_the_npu_arguments():
    """kvflash::incre_flash_attention = the torch_npu arguments (key/value as lists) + extensions."""
    npu = _registered("npu_incre_flash_attention")
    ext = _registered("incre_flash_attention")
    npu_args = [(a.name, str(a.type), a.default_value, a.kwarg_only) for a in npu.arguments]
    ext_args = [(a.name, str(a.type), a.default_value, a.kwarg_only) for a in ext.arguments]
    assert ext_args[3:-2] == npu_args[3:]
    assert [a[:2] for a in ext_args[:3]] == [("query", "Tensor"), ("key", "List[Tensor]"),
                                             ("value", "List[Tensor]")]
    assert ext_args[-2:] == [("return_softmax_lse", "bool", False, True),
                             ("zero_fully_masked_rows", "bool", False, True)]
    assert [r.name for r in ext.returns] == ["attention_out", "softmax_lse"]


def test_lightning_indexer_scores_keeps_the_npu_arguments():
    """kvflash::lightning_indexer_scores = npu_lightning_indexer's arguments but return_value,
    returning the selection and its fp32 scores."""
    npu = _registered("npu_lightning_indexer")
    ext = _registered("lightning_indexer_scores")
    npu_args = [(a.name, str(a.type), a.default_value, a.kwarg_only) for a in npu.arguments]
    ext_args = [(a.name, str(a.type), a.default_value, a.kwarg_only) for a in ext.arguments]
    assert npu_args[-1][0] == "return_value"
    assert ext_args == npu_args[:-1]
    assert [r.name for r in ext.returns] == ["sparse_indices", "scores"]
