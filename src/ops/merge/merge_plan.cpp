// MergePlan: the plan handle (core/plan_handle.hpp) over the merge's field table, validator and
// backends.
#include <cstddef>
#include <memory>
#include <string>
#include <utility>

#include "backends/lists.hpp"
#include "core/plan_handle.hpp"
#include "kvflash/merge.hpp"
#include "ops/merge/merge_fields.hpp"
#include "ops/merge/merge_plan_impl.hpp"
#include "ops/merge/merge_validate.hpp"
#include "ops/plan_faults.hpp"

namespace kvflash {
namespace {

struct Desc {
  using Plan = MergePlan;
  using Access = MergePlanAccess;
  using Args = MergeArgs;
  static constexpr const auto& fields = merge::kFields;
  static constexpr core::PlanOps<core::MergeProblem, MergeArgs, core::MergeData> ops = {
      merge::kOpName,   merge::validate, merge::strip_data, merge::check_matches_plan,
      merge::bind_data, merge::describe, merge_backends,    read_fault_record};
};
using Handle = core::PlanHandle<Desc>;

}  // namespace

MergePlan::MergePlan(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
MergePlan::~MergePlan() = default;

Status MergePlan::create(const MergeArgs& args, std::unique_ptr<MergePlan>* plan) {
  return Handle::create(args, plan);
}

size_t MergePlan::workspace_size() const { return impl_->workspace_size; }

Status MergePlan::run(const MergeArgs& args, void* workspace, size_t workspace_size,
                      void* stream) const {
  return Handle::run(*this, args, workspace, workspace_size, stream);
}

Status MergePlan::status(const void* workspace, void* stream) const {
  return Handle::status(*this, workspace, stream);
}

Status MergePlan::fingerprint(const MergeArgs& args, std::string* bytes) {
  return Handle::fingerprint(args, bytes);
}

Status merge_attention_states(const MergeArgs& args) { return Handle::one_shot(args); }

bool plan_writes_fault_record(const MergePlan& plan) { return Handle::writes_fault_record(plan); }

Status plan_decode_fault(const MergePlan& plan, const core::FaultRecord& record) {
  return Handle::decode_fault(plan, record);
}

}  // namespace kvflash
