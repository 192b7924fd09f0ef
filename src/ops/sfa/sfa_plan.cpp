// SfaPlan: the plan handle (core/plan_handle.hpp) over SFA's field table, validator, binder and
// backends.
#include <cstddef>
#include <memory>
#include <string>
#include <utility>

#include "backends/lists.hpp"
#include "core/plan_handle.hpp"
#include "kvflash/sfa.hpp"
#include "ops/plan_faults.hpp"
#include "ops/sfa/sfa_bind.hpp"
#include "ops/sfa/sfa_fields.hpp"
#include "ops/sfa/sfa_plan_impl.hpp"
#include "ops/sfa/sfa_validate.hpp"

namespace kvflash {
namespace {

struct Desc {
  using Plan = SfaPlan;
  using Access = SfaPlanAccess;
  using Args = SfaArgs;
  static constexpr const auto& fields = sfa::kFields;
  static constexpr core::PlanOps<core::SfaProblem, SfaArgs, core::SfaData> ops = {
      sfa::kOpName,   sfa::validate, sfa::strip_data, sfa::check_matches_plan,
      sfa::bind_data, sfa::describe, sfa_backends,    read_fault_record};
};
using Handle = core::PlanHandle<Desc>;

}  // namespace

SfaPlan::SfaPlan(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SfaPlan::~SfaPlan() = default;

Status SfaPlan::create(const SfaArgs& args, std::unique_ptr<SfaPlan>* plan) {
  return Handle::create(args, plan);
}

size_t SfaPlan::workspace_size() const { return impl_->workspace_size; }

Status SfaPlan::run(const SfaArgs& args, void* workspace, size_t workspace_size,
                    void* stream) const {
  return Handle::run(*this, args, workspace, workspace_size, stream);
}

Status SfaPlan::status(const void* workspace, void* stream) const {
  return Handle::status(*this, workspace, stream);
}

bool plan_writes_fault_record(const SfaPlan& plan) { return Handle::writes_fault_record(plan); }

Status plan_decode_fault(const SfaPlan& plan, const core::FaultRecord& record) {
  return Handle::decode_fault(plan, record);
}

Status SfaPlan::fingerprint(const SfaArgs& args, std::string* bytes) {
  return Handle::fingerprint(args, bytes);
}

Status sparse_flash_attention(const SfaArgs& args) { return Handle::one_shot(args); }

}  // namespace kvflash
