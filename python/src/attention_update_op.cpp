// npu_attention_update as a torch operator: the LSE merge of sp partial results given as lists
// (merge_attention_states's list form, kvflash/merge.hpp). update_type 0 returns the merged out
// and an empty [0] lse_out (not requested: torch_npu returns None there, which a registered
// operator's Tensor result cannot be); 1 also the merged lse [rows...] fp32. CPU kernel: views, a
// cached MergePlan, one run; fake kernel: the shapes.
#include <ATen/ATen.h>

#include "kvflash/merge.hpp"
#include "ops.hpp"
#include "ops/merge/merge_fields.hpp"
#include "plan_cache.hpp"
#include "schema_args.hpp"
#include "views.hpp"

namespace kvflash::torch_ext {
namespace {

using MergeCache = PlanCache<MergePlan, MergeArgs, merge::kFields>;

MergeCache& cache() {
  static MergeCache c(256);
  return c;
}

struct UpdateSchema {
  explicit UpdateSchema(const c10::FunctionSchema& s)
      : args(s, std::vector<std::string_view>{"update_type"},
             {{"partial_lse_list", "lse"}, {"partial_out_list", "local_out"}}),
        update_type(args.index().at("update_type")) {}
  SchemaArgs<merge::kFields> args;
  int update_type;
};

// The merge's names for npu_attention_update's arguments and outputs.
SchemaNames names_of(const UpdateSchema& s) {
  return {s.args.op(),
          {{"partial_lse_list", "lse"}, {"partial_out_list", "local_out"}, {"out_lse", "lse_out"}}};
}

const UpdateSchema& schema_of(const c10::OperatorHandle& op) {
  static const UpdateSchema s(op.schema());
  return s;
}

// local_out[0] / lse[0] (the outputs' shapes and dtypes), or a ValueError naming the argument.
std::pair<at::Tensor, at::Tensor> firsts(const UpdateSchema& s, c10::ArrayRef<c10::IValue> in) {
  const c10::List<at::Tensor> lse = in[0].toTensorList();
  const c10::List<at::Tensor> out = in[1].toTensorList();
  TORCH_CHECK_VALUE(!out.empty(), "[", s.args.op(), "] local_out must hold at least one tensor");
  TORCH_CHECK_VALUE(!lse.empty(), "[", s.args.op(), "] lse must hold at least one tensor");
  return {out.get(0), lse.get(0)};
}

int64_t update_type_of(const UpdateSchema& s, c10::ArrayRef<c10::IValue> in) {
  const int64_t t = in[static_cast<size_t>(s.update_type)].toInt();
  TORCH_CHECK_VALUE(t == 0 || t == 1, "[", s.args.op(),
                    "] update_type must be 0 (out) or 1 (out and lse_out), got ", t);
  return t;
}

}  // namespace

void attention_update_cpu(const c10::OperatorHandle& op, c10::DispatchKeySet,
                          torch::jit::Stack* stack) {
  const UpdateSchema& s = schema_of(op);
  const size_t n = s.args.index().num_arguments();
  const auto in = arguments(*stack, n);
  in_schema_names(names_of(s), [&] {
    const auto [out0, lse0] = firsts(s, in);
    const int64_t type = update_type_of(s, in);
    MergeArgs args;
    s.args.read(in, &args);
    // The plan first, over views of outputs not yet allocated: a bad call allocates nothing.
    args.out = unallocated_view(out0.sizes().vec(), out0.scalar_type(), out0, s.args.op(), "out");
    if (type == 1) {
      args.out_lse = unallocated_view(lse0.sizes().vec(), at::kFloat, out0, s.args.op(), "lse_out");
    }
    const auto plan = cache().get(args);
    const at::Tensor out = at::empty(out0.sizes(), out0.options());
    const at::Tensor lse =
        at::empty(type == 1 ? lse0.sizes() : at::IntArrayRef{0}, lse0.options().dtype(at::kFloat));
    args.out = view_of(out, s.args.op(), "out");
    if (type == 1) args.out_lse = view_of(lse, s.args.op(), "lse_out");
    run_plan(*plan, args, out0);
    finish(stack, n, out, lse);
  });
}

void attention_update_meta(const c10::OperatorHandle& op, c10::DispatchKeySet,
                           torch::jit::Stack* stack) {
  const UpdateSchema& s = schema_of(op);
  const size_t n = s.args.index().num_arguments();
  const auto in = arguments(*stack, n);
  const auto [out0, lse0] = in_schema_names(names_of(s), [&] {
    check_same_devices(s.args.index(), in);
    return firsts(s, in);
  });
  const int64_t type = update_type_of(s, in);
  finish(stack, n, at::empty_symint(out0.sym_sizes(), out0.options()),
         type == 1 ? at::empty_symint(lse0.sym_sizes(), lse0.options().dtype(at::kFloat))
                   : at::empty({0}, lse0.options().dtype(at::kFloat)));
}

// Reached for a call with no tensor to dispatch on (both lists empty: a ValueError naming them)
// and for tensors on a device with no kernel.
void attention_update_no_kernel(const c10::OperatorHandle& op, c10::DispatchKeySet,
                                torch::jit::Stack* stack) {
  const UpdateSchema& s = schema_of(op);
  const auto in = arguments(*stack, s.args.index().num_arguments());
  firsts(s, in);
  TORCH_CHECK_NOT_IMPLEMENTED(false, "[", s.args.op(), "] has no kernel for ",
                              in[1].toTensorList().get(0).device(), " tensors");
}

std::tuple<int64_t, int64_t, int64_t> attention_update_plan_cache_stats() {
  return cache().stats();
}
void clear_attention_update_plan_cache() { cache().clear(); }

}  // namespace kvflash::torch_ext
