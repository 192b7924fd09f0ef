// SfaPlan: the generic plan (core/plan_state.hpp) with SFA's validator, binder and backends.
#include <cstddef>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "backends/lists.hpp"
#include "core/error.hpp"
#include "kvflash/sfa.hpp"
#include "ops/sfa/sfa_bind.hpp"
#include "ops/sfa/sfa_plan_impl.hpp"
#include "ops/sfa/sfa_validate.hpp"

namespace kvflash {
namespace {

constexpr core::PlanOps<core::SfaProblem, SfaArgs, core::SfaData> kOps = {
    sfa::kOpName, sfa::validate, sfa::strip_data, sfa::check_matches_plan,
    sfa::bind_data, sfa::describe, sfa_backends};

}  // namespace

SfaPlan::SfaPlan(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SfaPlan::~SfaPlan() = default;

Status SfaPlan::create(const SfaArgs& args, std::unique_ptr<SfaPlan>* plan) {
  core::clear_error();
  if (plan == nullptr) return core::fail(Status::kNullPtr, sfa::kOpName, "plan is null");
  plan->reset();
  std::unique_ptr<Impl> impl(new (std::nothrow) Impl);
  if (!impl) return core::fail(Status::kRuntime, sfa::kOpName, "out of memory creating the plan");
  KVFLASH_RETURN_IF_ERROR(core::plan_create(kOps, args, impl.get()));
  plan->reset(new (std::nothrow) SfaPlan(std::move(impl)));
  if (!*plan) return core::fail(Status::kRuntime, sfa::kOpName, "out of memory creating the plan");
  return Status::kSuccess;
}

size_t SfaPlan::workspace_size() const { return impl_->workspace_size; }

Status SfaPlan::run(const SfaArgs& args, void* workspace, size_t workspace_size,
                    void* stream) const {
  core::clear_error();
  return core::plan_run(kOps, *impl_, args, workspace, workspace_size, stream);
}

Status sparse_flash_attention(const SfaArgs& args) {
  std::unique_ptr<SfaPlan> plan;
  KVFLASH_RETURN_IF_ERROR(SfaPlan::create(args, &plan));
  std::vector<std::byte> ws;
  try {
    ws.resize(plan->workspace_size());
  } catch (const std::bad_alloc&) {
    return core::fail(Status::kRuntime, sfa::kOpName, "out of memory allocating the workspace");
  }
  return plan->run(args, ws.data(), ws.size());
}

}  // namespace kvflash
