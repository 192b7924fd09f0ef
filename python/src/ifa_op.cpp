// IncreFlashAttention as torch operators: the CPU kernels (views of the tensors, a cached plan, one
// run) and the fake kernels (the output shapes, for torch.compile and torch.export).
#include <ATen/ATen.h>

#include "args.hpp"
#include "ops.hpp"
#include "views.hpp"

namespace kvflash::torch_ext {
namespace {

constexpr const char* kNpuOp = "kvflash::npu_incre_flash_attention";
constexpr const char* kExtOp = "kvflash::incre_flash_attention";

// Plans by metadata. A decode loop with fixed shapes and host lengths hits one entry; each new
// actual_seq_lengths is a new plan (the lengths are part of it, as in aclnn).
PlanCache<IfaPlan, IfaArgs>& cache() {
  static PlanCache<IfaPlan, IfaArgs> c(256);
  return c;
}

// attention_out has the query's shape (contiguous), its dtype or int8; the LSE, when asked for,
// is fp32 (B, N).
std::pair<at::Tensor, std::optional<at::Tensor>> run(const char* op, const IfaInputs& in) {
  check_defined(in.query, op, "query");
  at::Tensor out = at::empty(in.query.sizes(), in.query.options().dtype(ifa_out_dtype(in)));
  std::optional<at::Tensor> lse;
  if (in.return_softmax_lse) {
    const int64_t b = in.query.dim() > 0 ? in.query.size(0) : 0;
    lse = at::empty({b, std::max<int64_t>(in.num_heads, 0)}, in.query.options().dtype(at::kFloat));
  }
  const IfaArgs args = ifa_args(op, in, out, lse);
  const auto plan = cache().get(args);
  run_plan(*plan, args, in.query);
  return {std::move(out), std::move(lse)};
}

void check_devices(const char* op, const at::Tensor& query, at::TensorList key,
                   at::TensorList value, std::initializer_list<std::pair<const OptTensor*, const char*>> opt) {
  check_defined(query, op, "query");
  const c10::Device d = query.device();
  for (const auto& k : key) check_same_device(op, d, k, "key");
  for (const auto& v : value) check_same_device(op, d, v, "value");
  for (const auto& [t, name] : opt) check_same_device(op, d, *t, name);
}

at::Tensor meta_out(const at::Tensor& query, const OptTensor& quant_scale2) {
  const bool quant = quant_scale2.has_value() && quant_scale2->defined();
  return at::empty_symint(query.sym_sizes(),
                          query.options().dtype(quant ? at::kChar : query.scalar_type()));
}

}  // namespace

at::Tensor npu_ifa_cpu(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                       const OptTensor& /*padding_mask: reserved*/, const OptTensor& atten_mask,
                       const OptTensor& pse_shift, at::OptionalIntArrayRef actual_seq_lengths,
                       const OptTensor& antiquant_scale, const OptTensor& antiquant_offset,
                       const OptTensor& block_table, const OptTensor& dequant_scale1,
                       const OptTensor& quant_scale1, const OptTensor& dequant_scale2,
                       const OptTensor& quant_scale2, const OptTensor& quant_offset2,
                       const OptTensor& kv_padding_size, int64_t num_heads, double scale_value,
                       std::string_view input_layout, int64_t num_key_value_heads,
                       int64_t block_size, int64_t inner_precise) {
  const IfaInputs in =
      gather_ifa_inputs(query, {key}, {value}, atten_mask, pse_shift, actual_seq_lengths, antiquant_scale,
             antiquant_offset, block_table, dequant_scale1, quant_scale1, dequant_scale2,
             quant_scale2, quant_offset2, kv_padding_size, num_heads, scale_value, input_layout,
             num_key_value_heads, block_size, inner_precise);
  return run(kNpuOp, in).first;
}

std::tuple<at::Tensor, at::Tensor> ifa_cpu(
    const at::Tensor& query, at::TensorList key, at::TensorList value,
    const OptTensor& /*padding_mask: reserved*/, const OptTensor& atten_mask,
    const OptTensor& pse_shift, at::OptionalIntArrayRef actual_seq_lengths,
    const OptTensor& antiquant_scale, const OptTensor& antiquant_offset,
    const OptTensor& block_table, const OptTensor& dequant_scale1, const OptTensor& quant_scale1,
    const OptTensor& dequant_scale2, const OptTensor& quant_scale2, const OptTensor& quant_offset2,
    const OptTensor& kv_padding_size, int64_t num_heads, double scale_value,
    std::string_view input_layout, int64_t num_key_value_heads, int64_t block_size,
    int64_t inner_precise, bool return_softmax_lse, bool zero_fully_masked_rows) {
  IfaInputs in = gather_ifa_inputs(query, key.vec(), value.vec(), atten_mask, pse_shift, actual_seq_lengths,
                        antiquant_scale, antiquant_offset, block_table, dequant_scale1,
                        quant_scale1, dequant_scale2, quant_scale2, quant_offset2,
                        kv_padding_size, num_heads, scale_value, input_layout,
                        num_key_value_heads, block_size, inner_precise);
  in.return_softmax_lse = return_softmax_lse;
  in.zero_fully_masked_rows = zero_fully_masked_rows;
  auto [out, lse] = run(kExtOp, in);
  if (!lse) lse = at::empty({0}, query.options().dtype(at::kFloat));  // not requested
  return {std::move(out), std::move(*lse)};
}

at::Tensor npu_ifa_meta(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                        const OptTensor& padding_mask, const OptTensor& atten_mask,
                        const OptTensor& pse_shift, at::OptionalSymIntArrayRef,
                        const OptTensor& antiquant_scale, const OptTensor& antiquant_offset,
                        const OptTensor& block_table, const OptTensor& dequant_scale1,
                        const OptTensor& quant_scale1, const OptTensor& dequant_scale2,
                        const OptTensor& quant_scale2, const OptTensor& quant_offset2,
                        const OptTensor& kv_padding_size, int64_t, double, std::string_view,
                        int64_t, int64_t, int64_t) {
  check_devices(kNpuOp, query, key, value,
                {{&padding_mask, "padding_mask"}, {&atten_mask, "atten_mask"},
                 {&pse_shift, "pse_shift"}, {&antiquant_scale, "antiquant_scale"},
                 {&antiquant_offset, "antiquant_offset"}, {&block_table, "block_table"},
                 {&dequant_scale1, "dequant_scale1"}, {&quant_scale1, "quant_scale1"},
                 {&dequant_scale2, "dequant_scale2"}, {&quant_scale2, "quant_scale2"},
                 {&quant_offset2, "quant_offset2"}, {&kv_padding_size, "kv_padding_size"}});
  return meta_out(query, quant_scale2);
}

std::tuple<at::Tensor, at::Tensor> ifa_meta(
    const at::Tensor& query, at::TensorList key, at::TensorList value,
    const OptTensor& padding_mask, const OptTensor& atten_mask, const OptTensor& pse_shift,
    at::OptionalSymIntArrayRef, const OptTensor& antiquant_scale,
    const OptTensor& antiquant_offset, const OptTensor& block_table,
    const OptTensor& dequant_scale1, const OptTensor& quant_scale1,
    const OptTensor& dequant_scale2, const OptTensor& quant_scale2,
    const OptTensor& quant_offset2, const OptTensor& kv_padding_size, int64_t num_heads, double,
    std::string_view, int64_t, int64_t, int64_t, bool return_softmax_lse, bool) {
  check_devices(kExtOp, query, key, value,
                {{&padding_mask, "padding_mask"}, {&atten_mask, "atten_mask"},
                 {&pse_shift, "pse_shift"}, {&antiquant_scale, "antiquant_scale"},
                 {&antiquant_offset, "antiquant_offset"}, {&block_table, "block_table"},
                 {&dequant_scale1, "dequant_scale1"}, {&quant_scale1, "quant_scale1"},
                 {&dequant_scale2, "dequant_scale2"}, {&quant_scale2, "quant_scale2"},
                 {&quant_offset2, "quant_offset2"}, {&kv_padding_size, "kv_padding_size"}});
  at::Tensor out = meta_out(query, quant_scale2);
  const auto opts = query.options().dtype(at::kFloat);
  at::Tensor lse;
  if (return_softmax_lse) {
    const c10::SymInt b = query.dim() > 0 ? query.sym_size(0) : c10::SymInt(0);
    lse = at::empty_symint({b, c10::SymInt(std::max<int64_t>(num_heads, 0))}, opts);
  } else {
    lse = at::empty({0}, opts);
  }
  return {out, lse};
}

std::tuple<int64_t, int64_t, int64_t> ifa_plan_cache_stats() { return cache().stats(); }
void clear_ifa_plan_cache() { cache().clear(); }

}  // namespace kvflash::torch_ext
