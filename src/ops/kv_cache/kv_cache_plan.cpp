// ScatterPaKvCachePlan: the plan handle (core/plan_handle.hpp) over the cache write's field
// table, validator and backends.
#include <cstddef>
#include <memory>
#include <string>
#include <utility>

#include "backends/lists.hpp"
#include "core/plan_handle.hpp"
#include "kvflash/kv_cache.hpp"
#include "ops/kv_cache/kv_cache_fields.hpp"
#include "ops/kv_cache/kv_cache_plan_impl.hpp"
#include "ops/kv_cache/kv_cache_validate.hpp"
#include "ops/plan_faults.hpp"

namespace kvflash {
namespace {

struct Desc {
  using Plan = ScatterPaKvCachePlan;
  using Access = ScatterPaKvCachePlanAccess;
  using Args = ScatterPaKvCacheArgs;
  static constexpr const auto& fields = kv_cache::kFields;
  static constexpr core::PlanOps<core::KvCacheProblem, ScatterPaKvCacheArgs, core::KvCacheData>
      ops = {kv_cache::kOpName,    kv_cache::validate,
             kv_cache::strip_data, kv_cache::check_matches_plan,
             kv_cache::bind_data,  kv_cache::describe,
             kv_cache_backends,    read_fault_record};
};
using Handle = core::PlanHandle<Desc>;

}  // namespace

ScatterPaKvCachePlan::ScatterPaKvCachePlan(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ScatterPaKvCachePlan::~ScatterPaKvCachePlan() = default;

Status ScatterPaKvCachePlan::create(const ScatterPaKvCacheArgs& args,
                                    std::unique_ptr<ScatterPaKvCachePlan>* plan) {
  return Handle::create(args, plan);
}

size_t ScatterPaKvCachePlan::workspace_size() const { return impl_->workspace_size; }

Status ScatterPaKvCachePlan::run(const ScatterPaKvCacheArgs& args, void* workspace,
                                 size_t workspace_size, void* stream) const {
  return Handle::run(*this, args, workspace, workspace_size, stream);
}

Status ScatterPaKvCachePlan::status(const void* workspace, void* stream) const {
  return Handle::status(*this, workspace, stream);
}

Status ScatterPaKvCachePlan::fingerprint(const ScatterPaKvCacheArgs& args, std::string* bytes) {
  return Handle::fingerprint(args, bytes);
}

Status scatter_pa_kv_cache(const ScatterPaKvCacheArgs& args) { return Handle::one_shot(args); }

bool plan_writes_fault_record(const ScatterPaKvCachePlan& plan) {
  return Handle::writes_fault_record(plan);
}

Status plan_decode_fault(const ScatterPaKvCachePlan& plan, const core::FaultRecord& record) {
  return Handle::decode_fault(plan, record);
}

}  // namespace kvflash
