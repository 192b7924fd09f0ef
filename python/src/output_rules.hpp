// The operators' output rules, shared by the real and the fake kernels: each output's dtype and
// shape from the arguments. Int is int64_t (real kernel) or c10::SymInt (fake kernel).
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kvflash::torch_ext {

/// IFA's attention_out: the query's shape, int8 when quant_scale2 is given, else the query's dtype.
inline at::ScalarType ifa_out_dtype(const at::Tensor& query, const c10::IValue& quant_scale2) {
  const bool quant = quant_scale2.isTensor() && quant_scale2.toTensor().defined();
  return quant ? at::kChar : query.scalar_type();
}

/// IFA's softmax_lse, when asked for: fp32 (B, N), B the query's first dim (0 for a 0-D query).
template <class Int, class Sizes>
std::vector<Int> ifa_lse_shape(const Sizes& q, int64_t num_heads) {
  return {q.empty() ? Int(0) : Int(q[0]), Int(std::max<int64_t>(num_heads, 0))};
}

/// torch_npu's shape of softmax_max / softmax_sum with return_softmax_lse: [KV_N, T, N/KV_N] for a
/// TND query, [B, KV_N, S, N/KV_N] for BSND, where KV_N is the key's head axis (size(-2)) in every
/// layout. nullopt when the ranks or a zero KV_N leave it undefined (the library then rejects the
/// call).
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

/// merge_attention_states's out: partial_out's shape without the leading K; its lse, max and sum:
/// those dims without the last (D). Rank < 2 gives [0] (the library then rejects the call).
template <class Int, class Sizes>
std::vector<Int> merge_out_shape(const Sizes& partial_out) {
  if (partial_out.size() < 2) return {Int(0)};
  return std::vector<Int>(partial_out.begin() + 1, partial_out.end());
}
template <class Int, class Sizes>
std::vector<Int> merge_lse_shape(const Sizes& partial_out) {
  if (partial_out.size() < 2) return {Int(0)};
  return std::vector<Int>(partial_out.begin() + 1, partial_out.end() - 1);
}

/// torch_npu's shape of npu_lightning_indexer's sparse_indices (and of sparse_values with
/// return_value): BSND query [B, S1, key.size(2), K]; TND [T, key.size(1 for a TND key, else 2),
/// K]. nullopt when an empty tensor, a rank or sparse_count <= 0 leaves it undefined, and for a
/// sparse_count above the library's 8192 (no huge allocation before the library names it): the
/// library then rejects the call.
template <class Int, class Sizes>
std::optional<std::vector<Int>> li_indices_shape(const Sizes& q, const Sizes& k,
                                                 const std::string& layout_query,
                                                 const std::string& layout_key,
                                                 int64_t sparse_count) {
  const bool k_tnd = layout_key == "TND";
  const size_t head_axis = k_tnd ? 1 : 2;
  if (sparse_count <= 0 || sparse_count > 8192 || k.size() <= head_axis || q.size() < 2)
    return std::nullopt;
  for (const auto& d : q)
    if (d == 0) return std::nullopt;
  for (const auto& d : k)
    if (d == 0) return std::nullopt;
  if (layout_query == "BSND") {
    if (q.size() != 4) return std::nullopt;
    return std::vector<Int>{q[0], q[1], k[2], Int(sparse_count)};
  }
  if (q.size() != 3) return std::nullopt;
  return std::vector<Int>{q[0], k[head_axis], Int(sparse_count)};
}

}  // namespace kvflash::torch_ext
