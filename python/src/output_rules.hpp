// The operators' schema arguments, gathered, and turned into kvflash::IfaArgs / SfaArgs views
// (shared by the operators and the test-only library), plus the output shape rules that the real
// and the fake kernels share.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/OptionalArrayRef.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kvflash/ifa.hpp"
#include "kvflash/sfa.hpp"

namespace kvflash::torch_ext {

/// IncreFlashAttention's arguments (torch_npu's schema; key/value as lists, 1 tensor or B).
struct IfaInputs {
  at::Tensor query;
  std::vector<at::Tensor> key, value;
  std::optional<at::Tensor> atten_mask, pse_shift, antiquant_scale, antiquant_offset, block_table,
      dequant_scale1, quant_scale1, dequant_scale2, quant_scale2, quant_offset2, kv_padding_size;
  std::optional<std::vector<int64_t>> actual_seq_lengths;
  int64_t num_heads = 1;
  double scale_value = 1.0;
  std::string input_layout = "BSH";
  int64_t num_key_value_heads = 0, block_size = 0, inner_precise = 1;
  // kvflash extensions (the kvflash::incre_flash_attention operator)
  bool return_softmax_lse = false, zero_fully_masked_rows = false;
};

using OptTensor = std::optional<at::Tensor>;

/// torch_npu's npu_incre_flash_attention arguments (after padding_mask, which is reserved) as
/// IfaInputs: one place for the operators and the test-only library.
IfaInputs gather_ifa_inputs(const at::Tensor& query, std::vector<at::Tensor> key,
                            std::vector<at::Tensor> value, const OptTensor& atten_mask,
                            const OptTensor& pse_shift, at::OptionalIntArrayRef actual_seq_lengths,
                            const OptTensor& antiquant_scale, const OptTensor& antiquant_offset,
                            const OptTensor& block_table, const OptTensor& dequant_scale1,
                            const OptTensor& quant_scale1, const OptTensor& dequant_scale2,
                            const OptTensor& quant_scale2, const OptTensor& quant_offset2,
                            const OptTensor& kv_padding_size, int64_t num_heads,
                            double scale_value, std::string_view input_layout,
                            int64_t num_key_value_heads, int64_t block_size,
                            int64_t inner_precise);

/// The output dtype: int8 when quant_scale2 is given, else the query's.
at::ScalarType ifa_out_dtype(const IfaInputs& in);
/// The views of one call; out (query's shape, ifa_out_dtype) and lse (fp32 (B, N)) are the
/// outputs. Throws ValueError for a dtype kvflash has no name for.
IfaArgs ifa_args(const char* op, const IfaInputs& in, const at::Tensor& out,
                 const std::optional<at::Tensor>& lse);

/// SparseFlashAttention's arguments (torch_npu's schema).
struct SfaInputs {
  at::Tensor query, key, sparse_indices;
  std::optional<at::Tensor> value, block_table, actual_seq_lengths_query, actual_seq_lengths_kv,
      query_rope, key_rope, sinks;
  double scale_value = 1.0;
  int64_t sparse_block_size = 1;
  std::string layout_query = "BSND", layout_kv = "BSND";
  int64_t sparse_mode = 3, pre_tokens = INT64_MAX, next_tokens = INT64_MAX, attention_mode = 0;
  bool return_softmax_lse = false;
};

/// torch_npu's npu_sparse_flash_attention arguments as SfaInputs.
SfaInputs gather_sfa_inputs(const at::Tensor& query, const at::Tensor& key, const OptTensor& value,
                            const at::Tensor& sparse_indices, double scale_value,
                            const OptTensor& block_table,
                            const OptTensor& actual_seq_lengths_query,
                            const OptTensor& actual_seq_lengths_kv, const OptTensor& query_rope,
                            const OptTensor& key_rope, int64_t sparse_block_size,
                            std::string_view layout_query, std::string_view layout_kv,
                            int64_t sparse_mode, int64_t pre_tokens, int64_t next_tokens,
                            int64_t attention_mode, bool return_softmax_lse,
                            const OptTensor& sinks);
SfaArgs sfa_args(const char* op, const SfaInputs& in, const at::Tensor& out,
                 const at::Tensor& softmax_max, const at::Tensor& softmax_sum);

/// torch_npu's shape of softmax_max / softmax_sum with return_softmax_lse: [KV_N, T, N/KV_N] for a
/// TND query, [B, KV_N, S, N/KV_N] for BSND, where KV_N is the key's head axis (size(-2)) in every
/// layout. nullopt when the ranks or a zero KV_N leave it undefined (the library then rejects the
/// call). Int is int64_t (real kernel) or c10::SymInt (fake kernel).
template <class Int, class Sizes>
std::optional<std::vector<Int>> sfa_softmax_shape(const Sizes& q, const Sizes& k,
                                                  const std::string& layout_query) {
  if (k.size() < 2) return std::nullopt;
  const Int& kv_n = k[k.size() - 2];
  if (kv_n == 0) return std::nullopt;
  if (layout_query == "TND") {
    if (q.size() != 3) return std::nullopt;
    return std::vector<Int>{kv_n, q[0], q[1] / kv_n};
  }
  if (q.size() != 4) return std::nullopt;
  return std::vector<Int>{q[0], kv_n, q[1], q[2] / kv_n};
}

}  // namespace kvflash::torch_ext
