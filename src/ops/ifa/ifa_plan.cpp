// IfaPlan: the plan handle (core/plan_handle.hpp) over IFA's field table, validator, binder and
// backends.
#include <cstddef>
#include <memory>
#include <string>
#include <utility>

#include "backends/lists.hpp"
#include "core/plan_handle.hpp"
#include "kvflash/ifa.hpp"
#include "ops/ifa/ifa_bind.hpp"
#include "ops/ifa/ifa_error.hpp"
#include "ops/ifa/ifa_fields.hpp"
#include "ops/ifa/ifa_plan_impl.hpp"
#include "ops/ifa/ifa_validate.hpp"
#include "ops/plan_faults.hpp"

namespace kvflash {
namespace {

struct Desc {
  using Plan = IfaPlan;
  using Access = IfaPlanAccess;
  using Args = IfaArgs;
  static constexpr const auto& fields = ifa::kFields;
  static constexpr core::PlanOps<core::IfaProblem, IfaArgs, core::IfaData> ops = {
      ifa::kIfaOp,    ifa::validate_ifa, ifa::strip_data, ifa::check_matches_plan,
      ifa::bind_data, ifa::describe,     ifa_backends,    read_fault_record};
};
using Handle = core::PlanHandle<Desc>;

}  // namespace

IfaPlan::IfaPlan(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
IfaPlan::~IfaPlan() = default;

Status IfaPlan::create(const IfaArgs& args, std::unique_ptr<IfaPlan>* plan) {
  return Handle::create(args, plan);
}

size_t IfaPlan::workspace_size() const { return impl_->workspace_size; }

Status IfaPlan::run(const IfaArgs& args, void* workspace, size_t workspace_size,
                    void* stream) const {
  return Handle::run(*this, args, workspace, workspace_size, stream);
}

Status IfaPlan::status(const void* workspace, void* stream) const {
  return Handle::status(*this, workspace, stream);
}

bool plan_writes_fault_record(const IfaPlan& plan) { return Handle::writes_fault_record(plan); }

Status plan_decode_fault(const IfaPlan& plan, const core::FaultRecord& record) {
  return Handle::decode_fault(plan, record);
}

Status IfaPlan::fingerprint(const IfaArgs& args, std::string* bytes) {
  return Handle::fingerprint(args, bytes);
}

Status incre_flash_attention(const IfaArgs& args) { return Handle::one_shot(args); }

}  // namespace kvflash
