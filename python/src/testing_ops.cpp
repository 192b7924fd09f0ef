// torch.ops.kvflash_testing: what the Python tests need from the C++ side and the wheel must not
// ship. Built on request only (python/CMakeLists.txt, target kvflash_torch_testing).
//
//   ifa_check / sfa_check   run the double-precision reference (reference/) on the operator's
//                           inputs and compare the operator's outputs with it using the project's
//                           comparators (tests/support: every element, tolerances of
//                           docs/conventions.md, worst element reported). "" means it passed.
//   ifa_run_loop            the per-call time of IfaPlan::run in a C++ loop (plan made once), the
//                           baseline for the operator's per-call overhead.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "args.hpp"
#include "ifa_reference.hpp"
#include "ops.hpp"
#include "sfa_reference.hpp"
#include "support/compare.hpp"
#include "support/sfa_compare.hpp"
#include "views.hpp"

namespace kvflash::torch_ext {
namespace {

constexpr const char* kOp = "kvflash_testing";

IfaInputs gather_ifa(const at::Tensor& query, at::TensorList key, at::TensorList value,
                     const OptTensor& atten_mask, const OptTensor& pse_shift,
                     at::OptionalIntArrayRef actual_seq_lengths, const OptTensor& antiquant_scale,
                     const OptTensor& antiquant_offset, const OptTensor& block_table,
                     const OptTensor& dequant_scale1, const OptTensor& quant_scale1,
                     const OptTensor& dequant_scale2, const OptTensor& quant_scale2,
                     const OptTensor& quant_offset2, const OptTensor& kv_padding_size,
                     int64_t num_heads, double scale_value, std::string_view input_layout,
                     int64_t num_key_value_heads, int64_t block_size, int64_t inner_precise,
                     bool zero_fully_masked_rows) {
  IfaInputs in = gather_ifa_inputs(query, key.vec(), value.vec(), atten_mask, pse_shift,
                                   actual_seq_lengths, antiquant_scale, antiquant_offset,
                                   block_table, dequant_scale1, quant_scale1, dequant_scale2,
                                   quant_scale2, quant_offset2, kv_padding_size, num_heads,
                                   scale_value, input_layout, num_key_value_heads, block_size,
                                   inner_precise);
  in.zero_fully_masked_rows = zero_fully_masked_rows;
  return in;
}

std::string ifa_check(const at::Tensor& query, at::TensorList key, at::TensorList value,
                      const at::Tensor& attention_out, const OptTensor& softmax_lse,
                      const OptTensor& /*padding_mask*/, const OptTensor& atten_mask,
                      const OptTensor& pse_shift, at::OptionalIntArrayRef actual_seq_lengths,
                      const OptTensor& antiquant_scale, const OptTensor& antiquant_offset,
                      const OptTensor& block_table, const OptTensor& dequant_scale1,
                      const OptTensor& quant_scale1, const OptTensor& dequant_scale2,
                      const OptTensor& quant_scale2, const OptTensor& quant_offset2,
                      const OptTensor& kv_padding_size, int64_t num_heads, double scale_value,
                      std::string_view input_layout, int64_t num_key_value_heads,
                      int64_t block_size, int64_t inner_precise, bool /*return_softmax_lse*/,
                      bool zero_fully_masked_rows, std::string_view case_name,
                      bool allow_mostly_empty) {
  const IfaInputs in = gather_ifa(
      query, key, value, atten_mask, pse_shift, actual_seq_lengths, antiquant_scale,
      antiquant_offset, block_table, dequant_scale1, quant_scale1, dequant_scale2, quant_scale2,
      quant_offset2, kv_padding_size, num_heads, scale_value, input_layout, num_key_value_heads,
      block_size, inner_precise, zero_fully_masked_rows);
  const IfaArgs args = ifa_args(kOp, in, attention_out, softmax_lse);
  const auto ref = reference::ifa_reference(args);
  testing::IfaCompareOptions options;
  options.allow_mostly_empty = allow_mostly_empty;
  const auto result = testing::compare_ifa_output(std::string(case_name), args, ref, options);
  return result ? std::string() : std::string(result.message());
}

std::string sfa_check(const at::Tensor& query, const at::Tensor& key, const OptTensor& value,
                      const at::Tensor& sparse_indices, double scale_value,
                      const at::Tensor& attention_out, const at::Tensor& softmax_max,
                      const at::Tensor& softmax_sum, const OptTensor& block_table,
                      const OptTensor& actual_seq_lengths_query,
                      const OptTensor& actual_seq_lengths_kv, const OptTensor& query_rope,
                      const OptTensor& key_rope, int64_t sparse_block_size,
                      std::string_view layout_query, std::string_view layout_kv,
                      int64_t sparse_mode, int64_t pre_tokens, int64_t next_tokens,
                      int64_t attention_mode, bool return_softmax_lse, const OptTensor& sinks,
                      std::string_view case_name, bool allow_mostly_empty) {
  const SfaInputs in = gather_sfa_inputs(
      query, key, value, sparse_indices, scale_value, block_table, actual_seq_lengths_query,
      actual_seq_lengths_kv, query_rope, key_rope, sparse_block_size, layout_query, layout_kv,
      sparse_mode, pre_tokens, next_tokens, attention_mode, return_softmax_lse, sinks);
  const SfaArgs args = sfa_args(kOp, in, attention_out, softmax_max, softmax_sum);
  const auto ref = reference::sfa_reference(args);
  const auto result =
      testing::compare_sfa_output(std::string(case_name), args, ref, allow_mostly_empty);
  return result ? std::string() : std::string(result.message());
}

double ifa_run_loop(const at::Tensor& query, at::TensorList key, at::TensorList value,
                    const at::Tensor& attention_out, int64_t iters,
                    at::OptionalIntArrayRef actual_seq_lengths, const OptTensor& block_table,
                    int64_t num_heads, double scale_value, std::string_view input_layout,
                    int64_t num_key_value_heads, int64_t block_size) {
  const IfaInputs in = gather_ifa(query, key, value, {}, {}, actual_seq_lengths, {}, {},
                                  block_table, {}, {}, {}, {}, {}, {}, num_heads, scale_value,
                                  input_layout, num_key_value_heads, block_size, 1, false);
  const IfaArgs args = ifa_args(kOp, in, attention_out, std::nullopt);
  std::unique_ptr<IfaPlan> plan;
  if (IfaPlan::create(args, &plan) != Status::kSuccess) throw_status(Status::kInvalid);
  std::vector<std::byte> ws(plan->workspace_size());
  auto once = [&] {
    const Status s = plan->run(args, ws.data(), ws.size());
    if (s != Status::kSuccess) throw_status(s);
  };
  once();
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < iters; ++i) once();
  const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
  return dt.count() / static_cast<double>(std::max<int64_t>(iters, 1));
}

}  // namespace
}  // namespace kvflash::torch_ext

TORCH_LIBRARY(kvflash_testing, m) {
  using namespace kvflash::torch_ext;
  m.def(
      "ifa_check(Tensor query, Tensor[] key, Tensor[] value, Tensor attention_out, "
      "Tensor? softmax_lse, *, Tensor? padding_mask=None, Tensor? atten_mask=None, "
      "Tensor? pse_shift=None, SymInt[]? actual_seq_lengths=None, Tensor? antiquant_scale=None, "
      "Tensor? antiquant_offset=None, Tensor? block_table=None, Tensor? dequant_scale1=None, "
      "Tensor? quant_scale1=None, Tensor? dequant_scale2=None, Tensor? quant_scale2=None, "
      "Tensor? quant_offset2=None, Tensor? kv_padding_size=None, int num_heads=1, "
      "float scale_value=1.0, str input_layout=\"BSH\", int num_key_value_heads=0, "
      "int block_size=0, int inner_precise=1, bool return_softmax_lse=False, "
      "bool zero_fully_masked_rows=False, str case_name=\"\", bool allow_mostly_empty=False) "
      "-> str",
      &ifa_check);
  m.def(
      "sfa_check(Tensor query, Tensor key, Tensor? value, Tensor sparse_indices, "
      "float scale_value, Tensor attention_out, Tensor softmax_max, Tensor softmax_sum, *, "
      "Tensor? block_table=None, Tensor? actual_seq_lengths_query=None, "
      "Tensor? actual_seq_lengths_kv=None, Tensor? query_rope=None, Tensor? key_rope=None, "
      "int sparse_block_size=1, str layout_query=\"BSND\", str layout_kv=\"BSND\", "
      "int sparse_mode=3, int pre_tokens=9223372036854775807, "
      "int next_tokens=9223372036854775807, int attention_mode=0, "
      "bool return_softmax_lse=False, Tensor? sinks=None, str case_name=\"\", "
      "bool allow_mostly_empty=False) -> str",
      &sfa_check);
  m.def(
      "ifa_run_loop(Tensor query, Tensor[] key, Tensor[] value, Tensor attention_out, int iters, "
      "*, SymInt[]? actual_seq_lengths=None, Tensor? block_table=None, int num_heads=1, "
      "float scale_value=1.0, str input_layout=\"BSH\", int num_key_value_heads=0, "
      "int block_size=0) -> float",
      &ifa_run_loop);
}
