// IncreFlashAttention as torch operators, npu_incre_flash_attention and kvflash's
// incre_flash_attention: the CPU kernels (views of the tensors, a cached plan, one run) and the
// fake kernels (the output shapes, for torch.compile and torch.export).
#include <ATen/ATen.h>

#include "kvflash/ifa.hpp"
#include "ops.hpp"
#include "ops/ifa/ifa_fields.hpp"
#include "output_rules.hpp"
#include "plan_cache.hpp"
#include "schema_args.hpp"
#include "views.hpp"

namespace kvflash::torch_ext {
namespace {

// Plans by metadata. A decode loop with fixed shapes and host lengths hits one entry; each new
// actual_seq_lengths is a new plan (the lengths are part of it, as in aclnn).
PlanCache<IfaPlan, IfaArgs, ifa::kFields>& cache() {
  static PlanCache<IfaPlan, IfaArgs, ifa::kFields> c(256);
  return c;
}

// One operator's schema: padding_mask is reserved (torch_npu ignores it too), return_softmax_lse
// (incre_flash_attention only) asks for the LSE output.
struct IfaSchema {
  explicit IfaSchema(const c10::FunctionSchema& s)
      : args(s, {"padding_mask", "return_softmax_lse"}),
        quant_scale2(args.index().at("quant_scale2")),
        num_heads(args.index().at("num_heads")),
        return_softmax_lse(args.index().find("return_softmax_lse")) {}
  SchemaArgs<ifa::kFields> args;
  int quant_scale2, num_heads;
  int return_softmax_lse;  // -1 in npu_incre_flash_attention's schema
};

template <bool kExt>
const IfaSchema& schema_of(const c10::OperatorHandle& op) {
  static const IfaSchema s = [&] {
    IfaSchema made(op.schema());
    TORCH_CHECK(!kExt || made.return_softmax_lse >= 0, "[", made.args.op(),
                "] the schema has no return_softmax_lse");
    return made;
  }();
  return s;
}

}  // namespace

// attention_out has the query's shape (contiguous), its dtype or int8; the LSE, when asked for,
// is fp32 (B, N).
template <bool kExt>
void ifa_cpu(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
  const IfaSchema& s = schema_of<kExt>(op);
  const size_t n = s.args.index().num_arguments();
  const auto in = arguments(*stack, n);
  IfaArgs args;
  s.args.read(in, &args);
  const at::Tensor& query = in[0].toTensor();
  const at::Tensor out =
      at::empty(query.sizes(), query.options().dtype(ifa_out_dtype(query, in[s.quant_scale2])));
  args.attention_out = view_of(out, s.args.op(), "attention_out");
  const auto f32 = query.options().dtype(at::kFloat);
  at::Tensor lse;
  if (kExt && in[s.return_softmax_lse].toBool()) {
    lse = at::empty(ifa_lse_shape<int64_t>(query.sizes(), args.num_heads), f32);
    args.softmax_lse = view_of(lse, s.args.op(), "softmax_lse");
  }
  run_plan(*cache().get(args), args, query);
  if constexpr (kExt) {
    if (!lse.defined()) lse = at::empty({0}, f32);  // not requested
    finish(stack, n, out, std::move(lse));
  } else {
    finish(stack, n, out);
  }
}

template <bool kExt>
void ifa_meta(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
  const IfaSchema& s = schema_of<kExt>(op);
  const size_t n = s.args.index().num_arguments();
  const auto in = arguments(*stack, n);
  check_same_devices(s.args.index(), in);
  const at::Tensor& query = in[0].toTensor();
  const at::Tensor out = at::empty_symint(
      query.sym_sizes(), query.options().dtype(ifa_out_dtype(query, in[s.quant_scale2])));
  if constexpr (kExt) {
    const auto f32 = query.options().dtype(at::kFloat);
    at::Tensor lse = in[s.return_softmax_lse].toBool()
                         ? at::empty_symint(ifa_lse_shape<c10::SymInt>(query.sym_sizes(),
                                                                       in[s.num_heads].toInt()),
                                            f32)
                         : at::empty({0}, f32);
    finish(stack, n, out, std::move(lse));
  } else {
    finish(stack, n, out);
  }
}

template void ifa_cpu<false>(const c10::OperatorHandle&, c10::DispatchKeySet, torch::jit::Stack*);
template void ifa_cpu<true>(const c10::OperatorHandle&, c10::DispatchKeySet, torch::jit::Stack*);
template void ifa_meta<false>(const c10::OperatorHandle&, c10::DispatchKeySet, torch::jit::Stack*);
template void ifa_meta<true>(const c10::OperatorHandle&, c10::DispatchKeySet, torch::jit::Stack*);

std::tuple<int64_t, int64_t, int64_t> ifa_plan_cache_stats() { return cache().stats(); }
void clear_ifa_plan_cache() { cache().clear(); }

}  // namespace kvflash::torch_ext
