// IfaPlan: phase 1 (validate + size the workspace) and phase 2 (the run-time checks, then the
// CPU kernel). The public API never throws: allocation failures become kRuntime.
#include <cstddef>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "cpu/ifa_kernel.hpp"
#include "ifa/ifa_plan_impl.hpp"
#include "ifa/ifa_validate.hpp"
#include "ifa/view_check.hpp"
#include "kvflash/ifa.hpp"

namespace kvflash {

IfaPlan::IfaPlan(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
IfaPlan::~IfaPlan() = default;

Status IfaPlan::create(const IfaArgs& args, std::unique_ptr<IfaPlan>* plan) {
  core::clear_error();
  if (plan == nullptr) return ifa::null_ptr("plan (the output pointer) is null");
  plan->reset();
  try {
    auto impl = std::make_unique<Impl>();
    KVFLASH_RETURN_IF_ERROR(ifa::validate_ifa(args, &impl->problem));
    impl->workspace_size = cpu::ifa_workspace_size(impl->problem);
    plan->reset(new IfaPlan(std::move(impl)));  // the constructor is private: no make_unique
  } catch (const std::bad_alloc&) {
    return core::fail(Status::kRuntime, ifa::kIfaOp, "out of memory while planning");
  } catch (...) {
    return core::fail(Status::kRuntime, ifa::kIfaOp, "unexpected failure while planning");
  }
  return Status::kSuccess;
}

size_t IfaPlan::workspace_size() const { return impl_->workspace_size; }

Status IfaPlan::check_run(size_t workspace_size) const {
  core::clear_error();
  if (workspace_size < impl_->workspace_size) {
    return ifa::invalid("workspace_size (" + std::to_string(workspace_size) +
                        ") is smaller than required (" + std::to_string(impl_->workspace_size) +
                        ")");
  }
  return ifa::check_block_table(impl_->problem);
}

Status IfaPlan::run(void* workspace, size_t workspace_size) const {
  core::clear_error();
  if (workspace == nullptr && impl_->workspace_size > 0) {
    return ifa::null_ptr("workspace is null but " + std::to_string(impl_->workspace_size) +
                         " bytes are required");
  }
  KVFLASH_RETURN_IF_ERROR(check_run(workspace_size));
  try {
    cpu::ifa_run(impl_->problem, workspace);
  } catch (const std::exception& e) {
    // Only a failure to start worker threads can get here; nothing is half-written that a
    // retry would not overwrite.
    return core::fail(Status::kRuntime, ifa::kIfaOp, std::string("run failed: ") + e.what());
  } catch (...) {
    return core::fail(Status::kRuntime, ifa::kIfaOp, "run failed");
  }
  return Status::kSuccess;
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
  return plan->run(workspace.data(), workspace.size());
}

}  // namespace kvflash
