// merge_attention_states as a torch operator: the exact log-sum-exp merge of K partial attention
// results (kvflash/merge.hpp), the last step of a context-parallel decode (kvflash.distributed).
// CPU kernel: views of the tensors, one library call; fake kernel: the output shapes.
#include <ATen/ATen.h>

#include "kvflash/merge.hpp"
#include "ops.hpp"
#include "views.hpp"

namespace kvflash::torch_ext {
namespace {

constexpr const char* kOp = "kvflash::merge_attention_states";

bool given(const OptTensor& t) { return t.has_value() && t->defined(); }

// out: partial_out's shape without the leading K, in out_dtype (default partial_out's dtype);
// lse, max, sum: the row dims. Rank < 2 is left to the library's validation (message and status).
std::vector<int64_t> out_shape(const at::Tensor& po) {
  if (po.dim() < 2) return {0};
  return po.sizes().slice(1).vec();
}
std::vector<int64_t> lse_shape(const at::Tensor& po) {
  if (po.dim() < 2) return {0};
  return po.sizes().slice(1, po.dim() - 2).vec();
}

}  // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> merge_cpu(const at::Tensor& partial_out,
                                             const OptTensor& partial_lse,
                                             const OptTensor& partial_max,
                                             const OptTensor& partial_sum, const OptTensor& sink,
                                             std::optional<at::ScalarType> out_dtype) {
  check_defined(partial_out, kOp, "partial_out");
  const c10::Device d = partial_out.device();
  for (const auto& [t, name] : {std::pair{&partial_lse, "partial_lse"},
                                {&partial_max, "partial_max"}, {&partial_sum, "partial_sum"},
                                {&sink, "sink"}})
    check_same_device(kOp, d, *t, name);
  const auto f32 = partial_out.options().dtype(at::kFloat);
  at::Tensor out = at::empty(out_shape(partial_out),
                             partial_out.options().dtype(out_dtype.value_or(partial_out.scalar_type())));
  at::Tensor lse = at::empty(lse_shape(partial_out), f32);
  at::Tensor mx = at::empty(lse_shape(partial_out), f32);
  at::Tensor sm = at::empty(lse_shape(partial_out), f32);
  MergeArgs a;
  a.partial_out = view_of(partial_out, kOp, "partial_out");
  if (given(partial_lse)) a.partial_lse = view_of(*partial_lse, kOp, "partial_lse");
  if (given(partial_max)) a.partial_max = view_of(*partial_max, kOp, "partial_max");
  if (given(partial_sum)) a.partial_sum = view_of(*partial_sum, kOp, "partial_sum");
  if (given(sink)) a.sink = view_of(*sink, kOp, "sink");
  a.out = view_of(out, kOp, "out");
  a.out_lse = view_of(lse, kOp, "out_lse");
  a.out_max = view_of(mx, kOp, "out_max");
  a.out_sum = view_of(sm, kOp, "out_sum");
  const Status s = merge_attention_states(a);
  if (s != Status::kSuccess) throw_status(s);
  return {out, lse, mx, sm};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> merge_meta(const at::Tensor& partial_out, const OptTensor&,
                                              const OptTensor&, const OptTensor&, const OptTensor&,
                                              std::optional<at::ScalarType> out_dtype) {
  check_defined(partial_out, kOp, "partial_out");
  const auto sizes = partial_out.sym_sizes();
  std::vector<c10::SymInt> o(sizes.begin() + (sizes.size() >= 2 ? 1 : 0), sizes.end());
  std::vector<c10::SymInt> l(o.begin(), o.empty() ? o.end() : o.end() - 1);
  const auto f32 = partial_out.options().dtype(at::kFloat);
  return {at::empty_symint(o, partial_out.options().dtype(out_dtype.value_or(partial_out.scalar_type()))),
          at::empty_symint(l, f32), at::empty_symint(l, f32), at::empty_symint(l, f32)};
}

}  // namespace kvflash::torch_ext
