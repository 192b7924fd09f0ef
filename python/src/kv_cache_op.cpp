// vllm-ascend's cache writes as torch operators: npu_scatter_pa_kv_cache and ATB's
// _npu_reshape_and_cache (whose slot_indices is the table's slot_mapping and whose cache is always
// ND, "Norm"). CPU kernel: views of the tensors (the caches written in place, zero copy), a cached
// ScatterPaKvCachePlan, one run; fake kernel: the device check (nothing is returned).
#include <ATen/ATen.h>

#include "kvflash/kv_cache.hpp"
#include "ops.hpp"
#include "ops/kv_cache/kv_cache_fields.hpp"
#include "plan_cache.hpp"
#include "schema_args.hpp"
#include "views.hpp"

namespace kvflash::torch_ext {
namespace {

using KvCache = PlanCache<ScatterPaKvCachePlan, ScatterPaKvCacheArgs, kv_cache::kFields>;

KvCache& cache() {
  static KvCache c(256);
  return c;
}

std::vector<std::pair<std::string_view, std::string_view>> renames_of(bool atb) {
  if (!atb) return {};
  return {{"slot_mapping", "slot_indices"}};
}

template <bool kAtb>
const SchemaArgs<kv_cache::kFields>& schema_of(const c10::OperatorHandle& op) {
  static const SchemaArgs<kv_cache::kFields> s(op.schema(), {}, renames_of(kAtb));
  return s;
}

}  // namespace

template <bool kAtb>
void kv_cache_cpu(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
  const SchemaArgs<kv_cache::kFields>& s = schema_of<kAtb>(op);
  const size_t n = s.index().num_arguments();
  const auto in = arguments(*stack, n);
  const auto renames = renames_of(kAtb);
  in_schema_names({s.op(), {renames.begin(), renames.end()}}, [&] {
    ScatterPaKvCacheArgs args;
    s.read(in, &args);
    // 0-D value tensors: the key only (aclnnScatterPaKvCache's scenario 6, as torch_npu passes
    // it).
    if (args.value && args.value_cache && args.value->rank == 0 && args.value_cache->rank == 0) {
      args.value.reset();
      args.value_cache.reset();
    }
    run_plan(*cache().get(args), args, in[0].toTensor());
  });
  finish(stack, n);
}

template <bool kAtb>
void kv_cache_meta(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
  const SchemaArgs<kv_cache::kFields>& s = schema_of<kAtb>(op);
  const size_t n = s.index().num_arguments();
  check_same_devices(s.index(), arguments(*stack, n));
  finish(stack, n);
}

template void kv_cache_cpu<false>(const c10::OperatorHandle&, c10::DispatchKeySet,
                                  torch::jit::Stack*);
template void kv_cache_cpu<true>(const c10::OperatorHandle&, c10::DispatchKeySet,
                                 torch::jit::Stack*);
template void kv_cache_meta<false>(const c10::OperatorHandle&, c10::DispatchKeySet,
                                   torch::jit::Stack*);
template void kv_cache_meta<true>(const c10::OperatorHandle&, c10::DispatchKeySet,
                                  torch::jit::Stack*);

std::tuple<int64_t, int64_t, int64_t> kv_cache_plan_cache_stats() { return cache().stats(); }
void clear_kv_cache_plan_cache() { cache().clear(); }

}  // namespace kvflash::torch_ext
