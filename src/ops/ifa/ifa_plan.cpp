// IfaPlan: the generic plan (core/plan_state.hpp) with IFA's validator, binder and backends. The
// public API never throws: allocation failures become kRuntime.
#include <cstddef>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "backends/lists.hpp"
#include "core/error.hpp"
#include "ops/ifa/ifa_bind.hpp"
#include "ops/ifa/ifa_error.hpp"
#include "ops/ifa/ifa_plan_impl.hpp"
#include "ops/ifa/ifa_validate.hpp"
#include "kvflash/ifa.hpp"

namespace kvflash {
namespace {

constexpr core::PlanOps<core::IfaProblem, IfaArgs, core::IfaData> kOps = {
    ifa::kIfaOp, ifa::validate_ifa, ifa::strip_data, ifa::check_matches_plan,
    ifa::bind_data,   ifa::describe,       ifa_backends};

}  // namespace

IfaPlan::IfaPlan(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
IfaPlan::~IfaPlan() = default;

Status IfaPlan::create(const IfaArgs& args, std::unique_ptr<IfaPlan>* plan) {
  core::clear_error();
  if (plan == nullptr) return ifa::null_ptr("plan (the output pointer) is null");
  plan->reset();
  std::unique_ptr<Impl> impl(new (std::nothrow) Impl);
  if (!impl) return core::fail(Status::kRuntime, ifa::kIfaOp, "out of memory while planning");
  KVFLASH_RETURN_IF_ERROR(core::plan_create(kOps, args, impl.get()));
  plan->reset(new (std::nothrow) IfaPlan(std::move(impl)));  // private constructor
  if (!*plan) return core::fail(Status::kRuntime, ifa::kIfaOp, "out of memory while planning");
  return Status::kSuccess;
}

size_t IfaPlan::workspace_size() const { return impl_->workspace_size; }

Status IfaPlan::run(const IfaArgs& args, void* workspace, size_t workspace_size,
                    void* stream) const {
  core::clear_error();
  return core::plan_run(kOps, *impl_, args, workspace, workspace_size, stream);
}

Status incre_flash_attention(const IfaArgs& args) {
  std::unique_ptr<IfaPlan> plan;
  KVFLASH_RETURN_IF_ERROR(IfaPlan::create(args, &plan));
  std::vector<std::byte> workspace;
  try {
    workspace.resize(plan->workspace_size());
  } catch (const std::bad_alloc&) {
    return core::fail(
        Status::kRuntime, ifa::kIfaOp,
        "cannot allocate a workspace of " + std::to_string(plan->workspace_size()) + " bytes");
  }
  return plan->run(args, workspace.data(), workspace.size());
}

}  // namespace kvflash
