// The operators of torch.ops.kvflash: schemas and kernels.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/SymInt.h>
#include <c10/util/OptionalArrayRef.h>

#include <optional>
#include <string_view>
#include <tuple>

namespace kvflash::torch_ext {

// torch_npu 2.14.0's schemas, verbatim but for the namespace (python/tests/test_schema.py compares
// them with the lines).
inline constexpr const char* kIfaNpuSchema =
    "npu_incre_flash_attention(Tensor query, Tensor key, Tensor value, *, Tensor? padding_mask=None, "
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
    "int sparse_block_size=1, str layout_query=\"BSND\", str layout_kv=\"BSND\", int sparse_mode=3, "
    "int pre_tokens=9223372036854775807, int next_tokens=9223372036854775807, "
    "int attention_mode=0, bool return_softmax_lse=False, Tensor? sinks=None) -> "
    "(Tensor, Tensor, Tensor)";

// kvflash's extensions of IFA: key/value as lists (1 tensor, or one per batch), the softmax LSE
// output and zeroed fully masked rows. The other arguments are those of the torch_npu operator.
inline constexpr const char* kIfaExtSchema =
    "incre_flash_attention(Tensor query, Tensor[] key, Tensor[] value, *, "
    "Tensor? padding_mask=None, Tensor? atten_mask=None, Tensor? pse_shift=None, "
    "SymInt[]? actual_seq_lengths=None, Tensor? antiquant_scale=None, "
    "Tensor? antiquant_offset=None, Tensor? block_table=None, Tensor? dequant_scale1=None, "
    "Tensor? quant_scale1=None, Tensor? dequant_scale2=None, Tensor? quant_scale2=None, "
    "Tensor? quant_offset2=None, Tensor? kv_padding_size=None, int num_heads=1, "
    "float scale_value=1.0, str input_layout=\"BSH\", int num_key_value_heads=0, "
    "int block_size=0, int inner_precise=1, bool return_softmax_lse=False, "
    "bool zero_fully_masked_rows=False) -> (Tensor attention_out, Tensor softmax_lse)";

using OptTensor = std::optional<at::Tensor>;

// ---- IFA (ifa_op.cpp) ----
at::Tensor npu_ifa_cpu(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                       const OptTensor& padding_mask, const OptTensor& atten_mask,
                       const OptTensor& pse_shift, at::OptionalIntArrayRef actual_seq_lengths,
                       const OptTensor& antiquant_scale, const OptTensor& antiquant_offset,
                       const OptTensor& block_table, const OptTensor& dequant_scale1,
                       const OptTensor& quant_scale1, const OptTensor& dequant_scale2,
                       const OptTensor& quant_scale2, const OptTensor& quant_offset2,
                       const OptTensor& kv_padding_size, int64_t num_heads, double scale_value,
                       std::string_view input_layout, int64_t num_key_value_heads,
                       int64_t block_size, int64_t inner_precise);
at::Tensor npu_ifa_meta(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                        const OptTensor& padding_mask, const OptTensor& atten_mask,
                        const OptTensor& pse_shift, at::OptionalSymIntArrayRef actual_seq_lengths,
                        const OptTensor& antiquant_scale, const OptTensor& antiquant_offset,
                        const OptTensor& block_table, const OptTensor& dequant_scale1,
                        const OptTensor& quant_scale1, const OptTensor& dequant_scale2,
                        const OptTensor& quant_scale2, const OptTensor& quant_offset2,
                        const OptTensor& kv_padding_size, int64_t num_heads, double scale_value,
                        std::string_view input_layout, int64_t num_key_value_heads,
                        int64_t block_size, int64_t inner_precise);
std::tuple<at::Tensor, at::Tensor> ifa_cpu(
    const at::Tensor& query, at::TensorList key, at::TensorList value,
    const OptTensor& padding_mask, const OptTensor& atten_mask, const OptTensor& pse_shift,
    at::OptionalIntArrayRef actual_seq_lengths, const OptTensor& antiquant_scale,
    const OptTensor& antiquant_offset, const OptTensor& block_table,
    const OptTensor& dequant_scale1, const OptTensor& quant_scale1,
    const OptTensor& dequant_scale2, const OptTensor& quant_scale2,
    const OptTensor& quant_offset2, const OptTensor& kv_padding_size, int64_t num_heads,
    double scale_value, std::string_view input_layout, int64_t num_key_value_heads,
    int64_t block_size, int64_t inner_precise, bool return_softmax_lse,
    bool zero_fully_masked_rows);
std::tuple<at::Tensor, at::Tensor> ifa_meta(
    const at::Tensor& query, at::TensorList key, at::TensorList value,
    const OptTensor& padding_mask, const OptTensor& atten_mask, const OptTensor& pse_shift,
    at::OptionalSymIntArrayRef actual_seq_lengths, const OptTensor& antiquant_scale,
    const OptTensor& antiquant_offset, const OptTensor& block_table,
    const OptTensor& dequant_scale1, const OptTensor& quant_scale1,
    const OptTensor& dequant_scale2, const OptTensor& quant_scale2,
    const OptTensor& quant_offset2, const OptTensor& kv_padding_size, int64_t num_heads,
    double scale_value, std::string_view input_layout, int64_t num_key_value_heads,
    int64_t block_size, int64_t inner_precise, bool return_softmax_lse,
    bool zero_fully_masked_rows);

// ---- SFA (sfa_op.cpp) ----
using SfaResult = std::tuple<at::Tensor, at::Tensor, at::Tensor>;
SfaResult npu_sfa_cpu(const at::Tensor& query, const at::Tensor& key, const OptTensor& value,
                      const at::Tensor& sparse_indices, double scale_value,
                      const OptTensor& block_table, const OptTensor& actual_seq_lengths_query,
                      const OptTensor& actual_seq_lengths_kv, const OptTensor& query_rope,
                      const OptTensor& key_rope, int64_t sparse_block_size,
                      std::string_view layout_query, std::string_view layout_kv,
                      int64_t sparse_mode, int64_t pre_tokens, int64_t next_tokens,
                      int64_t attention_mode, bool return_softmax_lse, const OptTensor& sinks);
SfaResult npu_sfa_meta(const at::Tensor& query, const at::Tensor& key, const OptTensor& value,
                       const at::Tensor& sparse_indices, double scale_value,
                       const OptTensor& block_table, const OptTensor& actual_seq_lengths_query,
                       const OptTensor& actual_seq_lengths_kv, const OptTensor& query_rope,
                       const OptTensor& key_rope, int64_t sparse_block_size,
                       std::string_view layout_query, std::string_view layout_kv,
                       int64_t sparse_mode, int64_t pre_tokens, int64_t next_tokens,
                       int64_t attention_mode, bool return_softmax_lse, const OptTensor& sinks);

/// Plan cache statistics (hits, misses, cached plans) of IFA and SFA, and clearing them.
std::tuple<int64_t, int64_t, int64_t> ifa_plan_cache_stats();
std::tuple<int64_t, int64_t, int64_t> sfa_plan_cache_stats();
void clear_ifa_plan_cache();
void clear_sfa_plan_cache();

}  // namespace kvflash::torch_ext
