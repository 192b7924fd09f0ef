// The lightning indexer as torch operators: npu_lightning_indexer (torch_npu's schema) and
// lightning_indexer_scores (kvflash's: the selection with its fp32 scores, what a sharded
// indexer's ranks merge, python/kvflash/distributed.py). The CPU kernel (views, a cached plan, one
// run) and the fake kernel (the output shapes of docs/fia-pfa-indexer.md §1.5) serve both.
#include <ATen/ATen.h>

#include "kvflash/li.hpp"
#include "ops.hpp"
#include "ops/li/li_fields.hpp"
#include "output_rules.hpp"
#include "plan_cache.hpp"
#include "schema_args.hpp"
#include "views.hpp"

namespace kvflash::torch_ext {
namespace {

PlanCache<LightningIndexerPlan, LightningIndexerArgs, li::kFields>& cache() {
  static PlanCache<LightningIndexerPlan, LightningIndexerArgs, li::kFields> c(256);
  return c;
}

// Every argument of the schema is a field of the table. lightning_indexer_scores has no
// return_value (-1): its second output is always the fp32 scores.
struct LiSchema {
  explicit LiSchema(const c10::FunctionSchema& s)
      : args(s, {}),
        key(args.index().at("key")),
        layout_query(args.index().at("layout_query")),
        layout_key(args.index().at("layout_key")),
        sparse_count(args.index().at("sparse_count")),
        return_value(args.index().find("return_value")) {}
  SchemaArgs<li::kFields> args;
  int key, layout_query, layout_key, sparse_count, return_value;
};

template <bool kScores>
const LiSchema& schema_of(const c10::OperatorHandle& op) {
  static const LiSchema s(op.schema());
  return s;
}

}  // namespace

template <bool kScores>
void li_cpu(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
  const LiSchema& s = schema_of<kScores>(op);
  const size_t n = s.args.index().num_arguments();
  const auto in = arguments(*stack, n);
  LightningIndexerArgs args;
  s.args.read(in, &args);
  // The scores are an fp32 sparse_values (LightningIndexerArgs::sparse_values).
  if constexpr (kScores) args.return_value = true;
  const at::Tensor& query = in[0].toTensor();
  const at::Tensor& key = in[s.key].toTensor();
  // With shapes that leave torch_npu's rule undefined the library rejects the call, so an empty
  // placeholder is enough.
  const std::vector<int64_t> shape =
      li_indices_shape<int64_t>(query.sizes(), key.sizes(), args.layout_query, args.layout_key,
                                args.sparse_count)
          .value_or(std::vector<int64_t>{0});
  const at::Tensor indices = at::empty(shape, query.options().dtype(at::kInt));
  const at::Tensor values =
      at::empty(args.return_value ? shape : std::vector<int64_t>{0},
                kScores ? query.options().dtype(at::kFloat) : query.options());
  args.sparse_indices = view_of(indices, s.args.op(), "sparse_indices");
  if (args.return_value) args.sparse_values = view_of(values, s.args.op(), "sparse_values");
  run_plan(*cache().get(args), args, query);
  finish(stack, n, indices, values);
}

template <bool kScores>
void li_meta(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
  const LiSchema& s = schema_of<kScores>(op);
  const size_t n = s.args.index().num_arguments();
  const auto in = arguments(*stack, n);
  check_same_devices(s.args.index(), in);
  const at::Tensor& query = in[0].toTensor();
  const at::Tensor& key = in[s.key].toTensor();
  const std::string& layout_query = in[s.layout_query].toStringRef();
  const std::string& layout_key = in[s.layout_key].toStringRef();
  const int64_t sparse_count = in[s.sparse_count].toInt();
  const auto shape = li_indices_shape<c10::SymInt>(query.sym_sizes(), key.sym_sizes(), layout_query,
                                                   layout_key, sparse_count);
  TORCH_CHECK_VALUE(shape.has_value(), "[", s.args.op(),
                    "] the output shape needs a non-empty query (", query.sym_sizes(),
                    ") and key (", key.sym_sizes(), ") of the layouts' ranks and sparse_count (",
                    sparse_count, ") > 0");
  const at::Tensor indices = at::empty_symint(*shape, query.options().dtype(at::kInt));
  const at::Tensor values = kScores ? at::empty_symint(*shape, query.options().dtype(at::kFloat))
                            : in[s.return_value].toBool()
                                ? at::empty_symint(*shape, query.options())
                                : at::empty({0}, query.options());
  finish(stack, n, indices, values);
}

template void li_cpu<false>(const c10::OperatorHandle&, c10::DispatchKeySet, torch::jit::Stack*);
template void li_cpu<true>(const c10::OperatorHandle&, c10::DispatchKeySet, torch::jit::Stack*);
template void li_meta<false>(const c10::OperatorHandle&, c10::DispatchKeySet, torch::jit::Stack*);
template void li_meta<true>(const c10::OperatorHandle&, c10::DispatchKeySet, torch::jit::Stack*);

std::tuple<int64_t, int64_t, int64_t> li_plan_cache_stats() { return cache().stats(); }
void clear_li_plan_cache() { cache().clear(); }

}  // namespace kvflash::torch_ext
