// SparseFlashAttention as a torch operator: the CPU kernel (views, a cached plan, one run) and
// the fake kernel (the output shapes).
#include <ATen/ATen.h>

#include "args.hpp"
#include "ops.hpp"
#include "views.hpp"

namespace kvflash::torch_ext {
namespace {

constexpr const char* kOp = "kvflash::npu_sparse_flash_attention";

PlanCache<SfaPlan, SfaArgs>& cache() {
  static PlanCache<SfaPlan, SfaArgs> c(256);
  return c;
}

}  // namespace

SfaResult npu_sfa_cpu(const at::Tensor& query, const at::Tensor& key, const OptTensor& value,
                      const at::Tensor& sparse_indices, double scale_value,
                      const OptTensor& block_table, const OptTensor& actual_seq_lengths_query,
                      const OptTensor& actual_seq_lengths_kv, const OptTensor& query_rope,
                      const OptTensor& key_rope, int64_t sparse_block_size,
                      std::string_view layout_query, std::string_view layout_kv,
                      int64_t sparse_mode, int64_t pre_tokens, int64_t next_tokens,
                      int64_t attention_mode, bool return_softmax_lse, const OptTensor& sinks) {
  const SfaInputs in = gather_sfa_inputs(
      query, key, value, sparse_indices, scale_value, block_table, actual_seq_lengths_query,
      actual_seq_lengths_kv, query_rope, key_rope, sparse_block_size, layout_query, layout_kv,
      sparse_mode, pre_tokens, next_tokens, attention_mode, return_softmax_lse, sinks);
  check_defined(query, kOp, "query");
  check_defined(key, kOp, "key");
  const auto f32 = query.options().dtype(at::kFloat);
  at::Tensor out = at::empty(query.sizes(), query.options());
  at::Tensor softmax_max, softmax_sum;
  // With shapes that leave torch_npu's rule undefined the library rejects the call, so empty
  // placeholders are enough.
  const auto shape = return_softmax_lse
                         ? sfa_softmax_shape<int64_t>(query.sizes(), key.sizes(), in.layout_query)
                         : std::nullopt;
  softmax_max = at::empty(shape ? at::IntArrayRef(*shape) : at::IntArrayRef({0}), f32);
  softmax_sum = at::empty(shape ? at::IntArrayRef(*shape) : at::IntArrayRef({0}), f32);
  const SfaArgs args = sfa_args(kOp, in, out, softmax_max, softmax_sum);
  const auto plan = cache().get(args);
  run_plan(*plan, args, query);
  return {out, softmax_max, softmax_sum};
}

SfaResult npu_sfa_meta(const at::Tensor& query, const at::Tensor& key, const OptTensor& value,
                       const at::Tensor& sparse_indices, double, const OptTensor& block_table,
                       const OptTensor& actual_seq_lengths_query,
                       const OptTensor& actual_seq_lengths_kv, const OptTensor& query_rope,
                       const OptTensor& key_rope, int64_t, std::string_view layout_query,
                       std::string_view, int64_t, int64_t, int64_t, int64_t,
                       bool return_softmax_lse, const OptTensor& sinks) {
  check_defined(query, kOp, "query");
  const c10::Device d = query.device();
  check_same_device(kOp, d, key, "key");
  check_same_device(kOp, d, value, "value");
  check_same_device(kOp, d, sparse_indices, "sparse_indices");
  check_same_device(kOp, d, block_table, "block_table");
  check_same_device(kOp, d, actual_seq_lengths_query, "actual_seq_lengths_query");
  check_same_device(kOp, d, actual_seq_lengths_kv, "actual_seq_lengths_kv");
  check_same_device(kOp, d, query_rope, "query_rope");
  check_same_device(kOp, d, key_rope, "key_rope");
  check_same_device(kOp, d, sinks, "sinks");
  const auto f32 = query.options().dtype(at::kFloat);
  at::Tensor out = at::empty_symint(query.sym_sizes(), query.options());
  if (!return_softmax_lse) return {out, at::empty({0}, f32), at::empty({0}, f32)};
  const auto shape =
      sfa_softmax_shape<c10::SymInt>(query.sym_sizes(), key.sym_sizes(), std::string(layout_query));
  TORCH_CHECK_VALUE(shape.has_value(), "[", kOp, "] return_softmax_lse: the softmax shape needs a ",
                    layout_query == "TND" ? "3" : "4", "-D query (", query.sym_sizes(),
                    ") and a key whose head axis (dim -2) is non-zero (", key.sym_sizes(), ")");
  return {out, at::empty_symint(*shape, f32), at::empty_symint(*shape, f32)};
}

std::tuple<int64_t, int64_t, int64_t> sfa_plan_cache_stats() { return cache().stats(); }
void clear_sfa_plan_cache() { cache().clear(); }

}  // namespace kvflash::torch_ext
