// SparseFlashAttention as a torch operator: the CPU kernel (views, a cached plan, one run) and
// the fake kernel (the output shapes).
#include <ATen/ATen.h>

#include "kvflash/sfa.hpp"
#include "ops.hpp"
#include "ops/sfa/sfa_fields.hpp"
#include "output_rules.hpp"
#include "plan_cache.hpp"
#include "schema_args.hpp"
#include "views.hpp"

namespace kvflash::torch_ext {
namespace {

PlanCache<SfaPlan, SfaArgs, sfa::kFields>& cache() {
  static PlanCache<SfaPlan, SfaArgs, sfa::kFields> c(256);
  return c;
}

// Every argument of the schema is a field of the table.
struct SfaSchema {
  explicit SfaSchema(const c10::FunctionSchema& s)
      : args(s, {}),
        key(args.index().at("key")),
        layout_query(args.index().at("layout_query")),
        return_softmax_lse(args.index().at("return_softmax_lse")) {}
  SchemaArgs<sfa::kFields> args;
  int key, layout_query, return_softmax_lse;
};

const SfaSchema& schema_of(const c10::OperatorHandle& op) {
  static const SfaSchema s(op.schema());
  return s;
}

}  // namespace

void sfa_cpu(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
  const SfaSchema& s = schema_of(op);
  const size_t n = s.args.index().num_arguments();
  const auto in = arguments(*stack, n);
  SfaArgs args;
  s.args.read(in, &args);
  const at::Tensor& query = in[0].toTensor();
  const at::Tensor& key = in[s.key].toTensor();
  const auto f32 = query.options().dtype(at::kFloat);
  const at::Tensor out = at::empty(query.sizes(), query.options());
  // With shapes that leave torch_npu's rule undefined the library rejects the call, so empty
  // placeholders are enough.
  const auto shape = args.return_softmax_lse
                         ? sfa_softmax_shape<int64_t>(query.sizes(), key.sizes(), args.layout_query)
                         : std::nullopt;
  const std::vector<int64_t> softmax_shape = shape.value_or(std::vector<int64_t>{0});
  const at::Tensor softmax_max = at::empty(softmax_shape, f32);
  const at::Tensor softmax_sum = at::empty(softmax_shape, f32);
  args.attention_out = view_of(out, s.args.op(), "attention_out");
  if (args.return_softmax_lse) {
    args.softmax_max = view_of(softmax_max, s.args.op(), "softmax_max");
    args.softmax_sum = view_of(softmax_sum, s.args.op(), "softmax_sum");
  }
  run_plan(*cache().get(args), args, query);
  finish(stack, n, out, softmax_max, softmax_sum);
}

void sfa_meta(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
  const SfaSchema& s = schema_of(op);
  const size_t n = s.args.index().num_arguments();
  const auto in = arguments(*stack, n);
  check_same_devices(s.args.index(), in);
  const at::Tensor& query = in[0].toTensor();
  const at::Tensor& key = in[s.key].toTensor();
  const auto f32 = query.options().dtype(at::kFloat);
  const at::Tensor out = at::empty_symint(query.sym_sizes(), query.options());
  if (!in[s.return_softmax_lse].toBool()) {
    finish(stack, n, out, at::empty({0}, f32), at::empty({0}, f32));
    return;
  }
  const std::string& layout_query = in[s.layout_query].toStringRef();
  const auto shape = sfa_softmax_shape<c10::SymInt>(query.sym_sizes(), key.sym_sizes(), layout_query);
  TORCH_CHECK_VALUE(shape.has_value(), "[", s.args.op(),
                    "] return_softmax_lse: the softmax shape needs a ",
                    layout_query == "TND" ? "3" : "4", "-D query (", query.sym_sizes(),
                    ") and a key whose head axis (dim -2) is non-zero (", key.sym_sizes(), ")");
  finish(stack, n, out, at::empty_symint(*shape, f32), at::empty_symint(*shape, f32));
}

std::tuple<int64_t, int64_t, int64_t> sfa_plan_cache_stats() { return cache().stats(); }
void clear_sfa_plan_cache() { cache().clear(); }

}  // namespace kvflash::torch_ext
