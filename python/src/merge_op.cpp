// merge_attention_states as a torch operator: the exact log-sum-exp merge of K partial attention
// results (kvflash/merge.hpp), the last step of a context-parallel decode (kvflash.distributed).
// CPU kernel: views of the tensors, one library call; fake kernel: the output shapes.
#include <ATen/ATen.h>

#include "kvflash/merge.hpp"
#include "ops.hpp"
#include "ops/merge/merge_fields.hpp"
#include "output_rules.hpp"
#include "schema_args.hpp"
#include "views.hpp"

namespace kvflash::torch_ext {
namespace {

// out_dtype (default partial_out's) is the one argument that is not a field.
struct MergeSchema {
  explicit MergeSchema(const c10::FunctionSchema& s)
      : args(s, {"out_dtype"}), out_dtype(args.index().at("out_dtype")) {}
  SchemaArgs<merge::kFields> args;
  int out_dtype;
};

const MergeSchema& schema_of(const c10::OperatorHandle& op) {
  static const MergeSchema s(op.schema());
  return s;
}

at::TensorOptions out_options(const at::Tensor& partial_out, const c10::IValue& out_dtype) {
  return partial_out.options().dtype(out_dtype.isNone() ? partial_out.scalar_type()
                                                        : out_dtype.toScalarType());
}

}  // namespace

void merge_cpu(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
  const MergeSchema& s = schema_of(op);
  const size_t n = s.args.index().num_arguments();
  const auto in = arguments(*stack, n);
  check_same_devices(s.args.index(), in);
  const at::Tensor& partial_out = in[0].toTensor();
  const auto f32 = partial_out.options().dtype(at::kFloat);
  const auto rows = merge_lse_shape<int64_t>(partial_out.sizes());
  const at::Tensor out = at::empty(merge_out_shape<int64_t>(partial_out.sizes()),
                                   out_options(partial_out, in[s.out_dtype]));
  const at::Tensor lse = at::empty(rows, f32), mx = at::empty(rows, f32), sm = at::empty(rows, f32);
  MergeArgs a;
  s.args.read(in, &a);
  a.num_threads = call_num_threads();
  a.out = view_of(out, s.args.op(), "out");
  a.out_lse = view_of(lse, s.args.op(), "out_lse");
  a.out_max = view_of(mx, s.args.op(), "out_max");
  a.out_sum = view_of(sm, s.args.op(), "out_sum");
  const Status status = merge_attention_states(a);
  if (status != Status::kSuccess) throw_status(status);
  finish(stack, n, out, lse, mx, sm);
}

void merge_meta(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
  const MergeSchema& s = schema_of(op);
  const size_t n = s.args.index().num_arguments();
  const auto in = arguments(*stack, n);
  const at::Tensor& partial_out = in[0].toTensor();
  const auto f32 = partial_out.options().dtype(at::kFloat);
  const auto rows = merge_lse_shape<c10::SymInt>(partial_out.sym_sizes());
  finish(stack, n,
         at::empty_symint(merge_out_shape<c10::SymInt>(partial_out.sym_sizes()),
                          out_options(partial_out, in[s.out_dtype])),
         at::empty_symint(rows, f32), at::empty_symint(rows, f32), at::empty_symint(rows, f32));
}

}  // namespace kvflash::torch_ext
