"""The operator schemas, string for string, against torch_npu 2.14.0's (from its native-functions
yaml, namespace `npu`; kvflash registers them in `kvflash`)."""
import torch

# The lines of the issue, verbatim.
TORCH_NPU_IFA = 'npu_incre_flash_attention(Tensor query, Tensor key, Tensor value, *, Tensor? padding_mask=None, Tensor? atten_mask=None, Tensor? pse_shift=None, SymInt[]? actual_seq_lengths=None, Tensor? antiquant_scale=None, Tensor? antiquant_offset=None, Tensor? block_table=None, Tensor? dequant_scale1=None, Tensor? quant_scale1=None, Tensor? dequant_scale2=None, Tensor? quant_scale2=None, Tensor? quant_offset2=None, Tensor? kv_padding_size=None, int num_heads=1, float scale_value=1.0, str input_layout="BSH", int num_key_value_heads=0, int block_size=0, int inner_precise=1) -> Tensor'  # noqa: E501
TORCH_NPU_SFA = 'npu_sparse_flash_attention(Tensor query, Tensor key, Tensor? value, Tensor sparse_indices, float scale_value, *, Tensor? block_table=None, Tensor? actual_seq_lengths_query=None, Tensor? actual_seq_lengths_kv=None, Tensor? query_rope=None, Tensor? key_rope=None, int sparse_block_size=1, str layout_query="BSND", str layout_kv="BSND", int sparse_mode=3, int pre_tokens=9223372036854775807, int next_tokens=9223372036854775807, int attention_mode=0, bool return_softmax_lse=False, Tensor? sinks=None) -> (Tensor, Tensor, Tensor)'  # noqa: E501

# torch_npu's npu_lightning_indexer (op-plugin 7.3.0 and master), verbatim.
TORCH_NPU_LI = 'npu_lightning_indexer(Tensor query, Tensor key, Tensor weights, *, Tensor? actual_seq_lengths_query=None, Tensor? actual_seq_lengths_key=None, Tensor? block_table=None, str layout_query="BSND", str layout_key="BSND", int sparse_count=2048, int sparse_mode=3, int pre_tokens=9223372036854775807, int next_tokens=9223372036854775807, bool return_value=False) -> (Tensor, Tensor)'  # noqa: E501


def _registered(name):
    return getattr(torch.ops.kvflash, name).default._schema


def _check(line):
    name = line.split("(", 1)[0]
    schema = _registered(name)
    # torch prints a float default 1.0 as "1."; that is the only difference its printer makes
    assert str(schema) == "kvflash::" + line.replace("float scale_value=1.0", "float scale_value=1.")
    # and the same schema as torch parses the line (names, types, defaults, keyword-only)
    assert schema == torch._C.parse_schema("kvflash::" + line)


def test_incre_flash_attention_schema():
    _check(TORCH_NPU_IFA)


def test_sparse_flash_attention_schema():
    _check(TORCH_NPU_SFA)


def test_lightning_indexer_schema():
    _check(TORCH_NPU_LI)


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
