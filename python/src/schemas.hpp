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

/// schema with each (from, to) of edits applied in turn, each `from` replaced exactly once; a
/// `from` the schema does not hold is a c10::Error (at library load: a schema edited so that a
/// derived one no longer follows it).
std::string edit_schema(std::string_view schema,
                        const std::vector<std::pair<std::string_view, std::string_view>>& edits);

/// kvflash's incre_flash_attention: torch_npu's IFA arguments with key and value as lists (1
/// tensor, or one per batch), then the softmax LSE output and zeroed fully masked rows.
std::string ifa_ext_schema();

}  // namespace kvflash::torch_ext
