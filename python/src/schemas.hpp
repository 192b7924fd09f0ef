// The schemas of torch.ops.kvflash (and, derived from them, torch.ops.kvflash_testing's checks).
// Their argument names are the field tables' (src/ops/ifa/ifa_fields.hpp, sfa_fields.hpp,
// merge_fields.hpp): the kernels read each table field by its schema name (schema_args.hpp).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kvflash::torch_ext {

// torch_npu 2.14.0's schemas, verbatim but for the namespace (python/tests/test_schema.py compares
// them with the lines).
inline constexpr const char* kIfaNpuSchema =
    "npu_incre_flash_attention(Tensor query, Tensor key, Tensor value, *, Tensor? "
    "padding_mask=None, "
    "Tensor? atten_mask=None, Tensor? pse_shift=None, SymInt[]? actual_seq_lengths=None, "
    "Tensor? antiquant_scale=None, Tensor? antiquant_offset=None, Tensor? block_table=None, "
    "Tensor? dequant_scale1=None, Tensor? quant_scale1=None, Tensor? dequant_scale2=None, "
    "Tensor? quant_scale2=None, Tensor? quant_offset2=None, Tensor? kv_padding_size=None, "
    "int num_heads=1, float scale_value=1.0, str input_layout=\"BSH\", int num_key_value_heads=0, "
    "int block_size=0, int inner_precise=1) -> Tensor";

inline constexpr const char* kSfaNpuSchema =
    "npu_sparse_flash_attention(Tensor query, Tensor key, Tensor? value, Tensor sparse_indices, "
    "float scale_value, *, Tensor? block_table=None, Tensor? actual_seq_lengths_query=None, "
    "Tensor? actual_seq_lengths_kv=None, Tensor? query_rope=None, Tensor? key_rope=None, "
    "int sparse_block_size=1, str layout_query=\"BSND\", str layout_kv=\"BSND\", int "
    "sparse_mode=3, "
    "int pre_tokens=9223372036854775807, int next_tokens=9223372036854775807, "
    "int attention_mode=0, bool return_softmax_lse=False, Tensor? sinks=None) -> "
    "(Tensor, Tensor, Tensor)";

// torch_npu's npu_lightning_indexer (OPF 7.3.0 / master), verbatim but for the namespace.
inline constexpr const char* kLiNpuSchema =
    "npu_lightning_indexer(Tensor query, Tensor key, Tensor weights, *, "
    "Tensor? actual_seq_lengths_query=None, Tensor? actual_seq_lengths_key=None, "
    "Tensor? block_table=None, str layout_query=\"BSND\", str layout_key=\"BSND\", "
    "int sparse_count=2048, int sparse_mode=3, int pre_tokens=9223372036854775807, "
    "int next_tokens=9223372036854775807, bool return_value=False) -> (Tensor, Tensor)";

// kvflash's log-sum-exp merge of K partial results (kvflash/merge.hpp): partial_out [K, rows..., D]
// with partial_lse [K, rows...] or partial_max + partial_sum; returns out [rows..., D] (out_dtype,
// default partial_out's), the merged lse, max and sum [rows...] (fp32).
inline constexpr const char* kMergeSchema =
    "merge_attention_states(Tensor partial_out, Tensor? partial_lse=None, *, "
    "Tensor? partial_max=None, Tensor? partial_sum=None, Tensor? sink=None, "
    "ScalarType? out_dtype=None) -> (Tensor out, Tensor lse, Tensor max, Tensor sum)";

/// kvflash's lightning_indexer_scores: npu_lightning_indexer's arguments but return_value,
/// returning the selection and its fp32 scores (-inf in -1 slots): what a context-parallel rank
/// hands to the exact top-k merge (docs/lightning_indexer.md).
std::string li_scores_schema();

/// schema with each (from, to) of edits applied in turn, each `from` replaced exactly once; a
/// `from` the schema does not hold is a c10::Error (at library load: a schema edited so that a
/// derived one no longer follows it).
std::string edit_schema(std::string_view schema,
                        const std::vector<std::pair<std::string_view, std::string_view>>& edits);

/// kvflash's incre_flash_attention: torch_npu's IFA arguments with key and value as lists (1
/// tensor, or one per batch), then the softmax LSE output and zeroed fully masked rows.
std::string ifa_ext_schema();

// ---- PromptFlashAttention / FusedInferAttentionScore (fia_op.cpp) ----
// torch_npu's schemas (op-plugin master, docs/fia-pfa-indexer.md §1.1-§1.3), verbatim but
// for the namespace; python/tests/test_schema.py compares them with those lines. The argument names
// the field table (src/ops/fia/fia_fields.hpp) does not use are mapped in fia_op.cpp.
inline constexpr const char* kPfaNpuSchema =
    "npu_prompt_flash_attention(Tensor query, Tensor key, Tensor value, *, "
    "Tensor? padding_mask=None, Tensor? atten_mask=None, Tensor? pse_shift=None, "
    "int[]? actual_seq_lengths=None, Tensor? deq_scale1=None, Tensor? quant_scale1=None, "
    "Tensor? deq_scale2=None, Tensor? quant_scale2=None, Tensor? quant_offset2=None, "
    "int num_heads=1, float scale_value=1.0, int pre_tokens=2147483647, int next_tokens=0, "
    "str input_layout=\"BSH\", int num_key_value_heads=0, int[]? actual_seq_lengths_kv=None, "
    "int sparse_mode=0) -> Tensor";

inline constexpr const char* kFiaNpuSchema =
    "npu_fused_infer_attention_score(Tensor query, Tensor key, Tensor value, *, "
    "Tensor? pse_shift=None, Tensor? atten_mask=None, SymInt[]? actual_seq_lengths=None, "
    "SymInt[]? actual_seq_lengths_kv=None, Tensor? dequant_scale1=None, "
    "Tensor? quant_scale1=None, Tensor? dequant_scale2=None, Tensor? quant_scale2=None, "
    "Tensor? quant_offset2=None, Tensor? antiquant_scale=None, Tensor? antiquant_offset=None, "
    "Tensor? key_antiquant_scale=None, Tensor? key_antiquant_offset=None, "
    "Tensor? value_antiquant_scale=None, Tensor? value_antiquant_offset=None, "
    "Tensor? block_table=None, Tensor? query_padding_size=None, Tensor? kv_padding_size=None, "
    "Tensor? key_shared_prefix=None, Tensor? value_shared_prefix=None, "
    "SymInt[]? actual_shared_prefix_len=None, Tensor? query_rope=None, Tensor? key_rope=None, "
    "Tensor? key_rope_antiquant_scale=None, int num_heads=1, float scale=1.0, "
    "int pre_tokens=2147483647, int next_tokens=2147483647, str input_layout=\"BSH\", "
    "int num_key_value_heads=0, int sparse_mode=0, int inner_precise=0, int block_size=0, "
    "int antiquant_mode=0, int key_antiquant_mode=0, int value_antiquant_mode=0, "
    "bool softmax_lse_flag=False) -> (Tensor, Tensor)";

// The newest v2 (op-plugin master; the 7.2.0/7.3.0 form lacks quant_scale_p and out_dtype, and
// keyword callers of that form call this one unchanged).
inline constexpr const char* kFiaV2NpuSchema =
    "npu_fused_infer_attention_score_v2(Tensor query, Tensor key, Tensor value, *, "
    "Tensor? query_rope=None, Tensor? key_rope=None, Tensor? pse_shift=None, "
    "Tensor? atten_mask=None, SymInt[]? actual_seq_qlen=None, SymInt[]? actual_seq_kvlen=None, "
    "Tensor? block_table=None, Tensor? dequant_scale_query=None, Tensor? dequant_scale_key=None, "
    "Tensor? dequant_offset_key=None, Tensor? dequant_scale_value=None, "
    "Tensor? dequant_offset_value=None, Tensor? dequant_scale_key_rope=None, "
    "Tensor? quant_scale_out=None, Tensor? quant_offset_out=None, Tensor? quant_scale_p=None, "
    "Tensor? learnable_sink=None, int num_query_heads=1, int num_key_value_heads=0, "
    "float softmax_scale=1.0, int pre_tokens=2147483647, int next_tokens=2147483647, "
    "str input_layout=\"BSH\", int sparse_mode=0, int block_size=0, int query_quant_mode=0, "
    "int key_quant_mode=0, int value_quant_mode=0, int inner_precise=0, "
    "bool return_softmax_lse=False, int? query_dtype=None, int? key_dtype=None, "
    "int? value_dtype=None, int? query_rope_dtype=None, int? key_rope_dtype=None, "
    "int? key_shared_prefix_dtype=None, int? value_shared_prefix_dtype=None, "
    "int? dequant_scale_query_dtype=None, int? dequant_scale_key_dtype=None, "
    "int? dequant_scale_value_dtype=None, int? dequant_scale_key_rope_dtype=None, "
    "int? out_dtype=None) -> (Tensor, Tensor)";

// ---- vllm-ascend's cache writes, paged attention, FlashAttentionScore and the LSE update ----
// torch_npu 2.14.0's schemas (npu_native_functions_by_codegen.yaml; the ATB ones as
// libop_plugin_atb.so registers them), verbatim but for the namespace; python/tests/test_schema.py
// compares them with those lines (docs/python.md, "vllm-ascend's attention path").
inline constexpr const char* kScatterPaKvCacheNpuSchema =
    "npu_scatter_pa_kv_cache(Tensor key, Tensor value, Tensor(a!) key_cache, "
    "Tensor(b!) value_cache, Tensor slot_mapping, *, Tensor? compress_lens=None, "
    "Tensor? compress_seq_offsets=None, Tensor? seq_lens=None, str? cache_mode='PA_NZ') -> ()";

inline constexpr const char* kReshapeAndCacheNpuSchema =
    "_npu_reshape_and_cache(Tensor key, Tensor value, Tensor(a!) key_cache, "
    "Tensor(b!) value_cache, Tensor slot_indices) -> ()";

inline constexpr const char* kPagedAttentionNpuSchema =
    "_npu_paged_attention(Tensor query, Tensor key_cache, Tensor value_cache, int num_kv_heads, "
    "int num_heads, float scale_value, Tensor block_table, Tensor context_lens, Tensor(a!) out, "
    "*, Tensor? workspace=None) -> ()";

inline constexpr const char* kPagedAttentionWorkspaceNpuSchema =
    "_npu_paged_attention_get_workspace(Tensor query, Tensor key_cache, Tensor value_cache, "
    "int num_kv_heads, int num_heads, float scale_value, Tensor block_table, "
    "Tensor context_lens, Tensor(a!) out) -> Tensor";

inline constexpr const char* kFusionAttentionNpuSchema =
    "npu_fusion_attention(Tensor query, Tensor key, Tensor value, int head_num, "
    "str input_layout, Tensor? pse=None, Tensor? padding_mask=None, Tensor? atten_mask=None, "
    "float scale=1., float keep_prob=1., int pre_tockens=2147483647, "
    "int next_tockens=2147483647, int inner_precise=0, int[]? prefix=None, "
    "int[]? actual_seq_qlen=None, int[]? actual_seq_kvlen=None, int sparse_mode=0, "
    "bool gen_mask_parallel=True, bool sync=False, str softmax_layout=\"\", Tensor? sink=None, "
    "Tensor? dropout_mask=None, int seed=0, int offset=0) -> "
    "(Tensor, Tensor, Tensor, Tensor, int, int, int)";

inline constexpr const char* kAttentionUpdateNpuSchema =
    "npu_attention_update(Tensor[] lse, Tensor[] local_out, int update_type) -> (Tensor, Tensor)";

/// The companions of FIA v1 (v2 with `v2`): `.out` (the schema's arguments, then `Tensor?
/// workspace=None, Tensor(a!) attention_out, Tensor(b!) softmax_lse`, returning the two) and
/// `_npu_fused_infer_attention_score(_v2)_get_max_workspace` (the schema's arguments, returning
/// the workspace), as torch_npu declares them.
std::string fia_out_schema(bool v2);
std::string fia_workspace_schema(bool v2);

}  // namespace kvflash::torch_ext
