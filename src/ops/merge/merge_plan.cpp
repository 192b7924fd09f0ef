// MergePlan: the generic plan (core/plan_state.hpp) with the merge's validator and backends.
#include <cstddef>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "backends/lists.hpp"
#include "core/error.hpp"
#include "kvflash/merge.hpp"
#include "ops/merge/merge_plan_impl.hpp"
#include "ops/merge/merge_validate.hpp"

namespace kvflash {
namespace {

constexpr core::PlanOps<core::MergeProblem, MergeArgs, core::MergeData> kOps = {
    merge::kOpName, merge::validate, merge::strip_data, merge::check_matches_plan,
    merge::bind_data, merge::describe, merge_backends};

}  // namespace

MergePlan::MergePlan(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
MergePlan::~MergePlan() = default;

Status MergePlan::create(const MergeArgs& args, std::unique_ptr<MergePlan>* plan) {
  core::clear_error();
  if (plan == nullptr) return core::fail(Status::kNullPtr, merge::kOpName, "plan is null");
  plan->reset();
  std::unique_ptr<Impl> impl(new (std::nothrow) Impl);
  if (!impl) return core::fail(Status::kRuntime, merge::kOpName, "out of memory while planning");
  KVFLASH_RETURN_IF_ERROR(core::plan_create(kOps, args, impl.get()));
  plan->reset(new (std::nothrow) MergePlan(std::move(impl)));
  if (!*plan) return core::fail(Status::kRuntime, merge::kOpName, "out of memory while planning");
  return Status::kSuccess;
}

size_t MergePlan::workspace_size() const { return impl_->workspace_size; }

Status MergePlan::run(const MergeArgs& args, void* workspace, size_t workspace_size,
                      void* stream) const {
  core::clear_error();
  return core::plan_run(kOps, *impl_, args, workspace, workspace_size, stream);
}

Status merge_attention_states(const MergeArgs& args) {
  std::unique_ptr<MergePlan> plan;
  KVFLASH_RETURN_IF_ERROR(MergePlan::create(args, &plan));
  std::vector<std::byte> ws;
  try {
    ws.resize(plan->workspace_size());
  } catch (const std::bad_alloc&) {
    return core::fail(Status::kRuntime, merge::kOpName, "out of memory allocating the workspace");
  }
  return plan->run(args, ws.data(), ws.size());
}

}  // namespace kvflash
