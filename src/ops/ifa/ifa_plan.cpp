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

namespace kvflash {
namespace {

struct Desc {
  using Plan = IfaPlan;
  using Access = IfaPlanAccess;
  using Args = IfaArgs;
  static constexpr const auto& fields = ifa::kFields;
  static constexpr core::PlanOps<core::IfaProblem, IfaArgs, core::IfaData> ops = {
      ifa::kIfaOp,    ifa::validate_ifa, ifa::strip_data, ifa::check_matches_plan,
      ifa::bind_data, ifa::describe,     ifa_backends};
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

Status IfaPlan::fingerprint(const IfaArgs& args, std::string* bytes) {
  return Handle::fingerprint(args, bytes);
}

Status incre_flash_attention(const IfaArgs& args) { return Handle::one_shot(args); }

}  // namespace kvflash
