// LightningIndexerPlan: the plan handle (core/plan_handle.hpp) over the indexer's field table,
// validator, binder and backends.
#include <cstddef>
#include <memory>
#include <string>
#include <utility>

#include "backends/lists.hpp"
#include "core/plan_handle.hpp"
#include "kvflash/li.hpp"
#include "ops/li/li_bind.hpp"
#include "ops/li/li_fields.hpp"
#include "ops/li/li_plan_impl.hpp"
#include "ops/li/li_validate.hpp"
#include "ops/plan_faults.hpp"

namespace kvflash {
namespace {

struct Desc {
  using Plan = LightningIndexerPlan;
  using Access = LightningIndexerPlanAccess;
  using Args = LightningIndexerArgs;
  static constexpr const auto& fields = li::kFields;
  static constexpr core::PlanOps<core::LiProblem, LightningIndexerArgs, core::LiData> ops = {
      li::kOpName,   li::validate, li::strip_data, li::check_matches_plan,
      li::bind_data, li::describe, li_backends,    read_fault_record};
};
using Handle = core::PlanHandle<Desc>;

}  // namespace

LightningIndexerPlan::LightningIndexerPlan(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LightningIndexerPlan::~LightningIndexerPlan() = default;

Status LightningIndexerPlan::create(const LightningIndexerArgs& args,
                                    std::unique_ptr<LightningIndexerPlan>* plan) {
  return Handle::create(args, plan);
}

size_t LightningIndexerPlan::workspace_size() const { return impl_->workspace_size; }

Status LightningIndexerPlan::run(const LightningIndexerArgs& args, void* workspace,
                                 size_t workspace_size, void* stream) const {
  return Handle::run(*this, args, workspace, workspace_size, stream);
}

Status LightningIndexerPlan::status(const void* workspace, void* stream) const {
  return Handle::status(*this, workspace, stream);
}

bool plan_writes_fault_record(const LightningIndexerPlan& plan) {
  return Handle::writes_fault_record(plan);
}

Status plan_decode_fault(const LightningIndexerPlan& plan, const core::FaultRecord& record) {
  return Handle::decode_fault(plan, record);
}

Status LightningIndexerPlan::fingerprint(const LightningIndexerArgs& args, std::string* bytes) {
  return Handle::fingerprint(args, bytes);
}

Status lightning_indexer(const LightningIndexerArgs& args) { return Handle::one_shot(args); }

}  // namespace kvflash
