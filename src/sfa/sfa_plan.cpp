// SfaPlan: validate once, schedule once, run many times.
#include <cstddef>
#include <memory>
#include <new>
#include <vector>

#include "core/error.hpp"
#include "cpu/sfa_kernel.hpp"
#include "kvflash/sfa.hpp"
#include "sfa/sfa_plan_impl.hpp"
#include "sfa/sfa_validate.hpp"

namespace kvflash {

SfaPlan::SfaPlan(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SfaPlan::~SfaPlan() = default;

Status SfaPlan::create(const SfaArgs& args, std::unique_ptr<SfaPlan>* plan) {
  core::clear_error();
  if (plan == nullptr) return core::fail(Status::kNullPtr, sfa::kOpName, "plan is null");
  plan->reset();
  auto impl = std::unique_ptr<Impl>(new (std::nothrow) Impl);
  if (!impl) return core::fail(Status::kRuntime, sfa::kOpName, "out of memory creating the plan");
  try {
    if (Status s = sfa::validate(args, &impl->problem); s != Status::kSuccess) return s;
  } catch (const std::bad_alloc&) {
    return core::fail(Status::kRuntime, sfa::kOpName, "out of memory validating the arguments");
  }
  impl->schedule = cpu::sfa_schedule(impl->problem, args.num_threads);
  impl->workspace_size = cpu::sfa_workspace_size(impl->problem, impl->schedule);
  plan->reset(new (std::nothrow) SfaPlan(std::move(impl)));
  if (!*plan) return core::fail(Status::kRuntime, sfa::kOpName, "out of memory creating the plan");
  return Status::kSuccess;
}

size_t SfaPlan::workspace_size() const { return impl_->workspace_size; }

Status SfaPlan::check_run(size_t workspace_size) const {
  core::clear_error();
  if (workspace_size < impl_->workspace_size)
    return core::fail(Status::kInvalid, sfa::kOpName,
                      "workspace_size (" + std::to_string(workspace_size) +
                          ") must be >= " + std::to_string(impl_->workspace_size));
  return sfa::check_block_ids(impl_->problem);
}

Status SfaPlan::run(void* workspace, size_t workspace_size) const {
  if (Status s = check_run(workspace_size); s != Status::kSuccess) return s;
  if (workspace == nullptr && impl_->workspace_size > 0)
    return core::fail(Status::kNullPtr, sfa::kOpName, "workspace is null");
  cpu::sfa_run(impl_->problem, impl_->schedule, workspace);
  return Status::kSuccess;
}

Status sparse_flash_attention(const SfaArgs& args) {
  std::unique_ptr<SfaPlan> plan;
  if (Status s = SfaPlan::create(args, &plan); s != Status::kSuccess) return s;
  std::vector<std::byte> ws;
  try {
    ws.resize(plan->workspace_size());
  } catch (const std::bad_alloc&) {
    return core::fail(Status::kRuntime, sfa::kOpName, "out of memory allocating the workspace");
  }
  return plan->run(ws.data(), ws.size());
}

}  // namespace kvflash
