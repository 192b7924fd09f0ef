// An operator's public plan class, written once: create (the output pointer, the allocations,
// the generic plan_create of core/plan_state.hpp), run, status (a device run's fault record), the
// one-shot call and the fingerprint, with every plan-level message. IfaPlan, SfaPlan and MergePlan
// forward to PlanHandle<Desc>, where Desc names the operator's pieces:
//
//   struct Desc {
//     using Plan = IfaPlan;          // the public class
//     using Access = IfaPlanAccess;  // its friend: Impl (a PlanState), impl(plan), make(impl)
//     using Args = IfaArgs;
//     static constexpr const auto& fields = ifa::kFields;  // core/fields.hpp
//     static constexpr core::PlanOps<core::IfaProblem, IfaArgs, core::IfaData> ops = {...};
//   };
#pragma once

#include <cstddef>
#include <cstdio>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/plan_fields.hpp"
#include "core/plan_state.hpp"
#include "kvflash/status.hpp"

namespace kvflash::core {

template <class Desc>
struct PlanHandle {
  using Plan = typename Desc::Plan;
  using Args = typename Desc::Args;
  using Access = typename Desc::Access;
  using Impl = typename Access::Impl;

  static constexpr const char* op() { return Desc::ops.op; }

  static Status create(const Args& args, std::unique_ptr<Plan>* plan) {
    clear_error();
    if (plan == nullptr) return fail(Status::kNullPtr, op(), "plan (the output pointer) is null");
    plan->reset();
    std::unique_ptr<Impl> impl(new (std::nothrow) Impl);
    if (!impl) return fail_noalloc(Status::kRuntime, op(), "out of memory while planning");
    KVFLASH_RETURN_IF_ERROR(plan_create(Desc::ops, args, impl.get()));
    plan->reset(Access::make(std::move(impl)));
    if (!*plan) return fail_noalloc(Status::kRuntime, op(), "out of memory while planning");
    return Status::kSuccess;
  }

  static Status run(const Plan& plan, const Args& args, void* workspace, size_t workspace_size,
                    void* stream) {
    clear_error();
    return plan_run(Desc::ops, Access::impl(plan), args, workspace, workspace_size, stream);
  }

  static Status status(const Plan& plan, const void* workspace, void* stream) {
    clear_error();
    try {
      return plan_status(Desc::ops, Access::impl(plan), workspace, stream);
    } catch (const std::bad_alloc&) {
      return fail_noalloc(Status::kRuntime, op(), "out of memory while reporting a device fault");
    }
  }

  /// For the aclnn CUDA runtime, which copies the record itself (in stream order, into pinned
  /// memory) and decodes it when the stream is synchronised: whether the plan's runs write a
  /// fault record (a device plan whose entry has a fault hook)...
  static bool writes_fault_record(const Plan& plan) {
    return plan_fault_entry(Desc::ops, Access::impl(plan)) != nullptr;
  }
  /// ... and the status of a host copy of one: the entry's hook (kSuccess when there is none).
  static Status decode_fault(const Plan& plan, const FaultRecord& record) {
    clear_error();
    const Impl& impl = Access::impl(plan);
    const auto* entry = plan_fault_entry(Desc::ops, impl);
    if (entry == nullptr) return Status::kSuccess;
    try {
      return entry->fault_status(impl.problem, record);
    } catch (const std::bad_alloc&) {
      return fail_noalloc(Status::kRuntime, op(), "out of memory while reporting a device fault");
    }
  }

  /// Validate, allocate a workspace (host memory), run.
  static Status one_shot(const Args& args) {
    std::unique_ptr<Plan> plan;
    KVFLASH_RETURN_IF_ERROR(create(args, &plan));
    const size_t size = plan->workspace_size();
    std::vector<std::byte> workspace;
    try {
      workspace.resize(size);
    } catch (const std::bad_alloc&) {
      char message[80];
      std::snprintf(message, sizeof message, "cannot allocate a workspace of %zu bytes", size);
      return fail_noalloc(Status::kRuntime, op(), message);
    }
    return plan->run(args, workspace.data(), workspace.size());
  }

  static Status fingerprint(const Args& args, std::string* bytes) {
    clear_error();
    if (bytes == nullptr) return fail(Status::kNullPtr, op(), "bytes (the output pointer) is null");
    try {
      bytes->clear();
      fingerprint_fields(Desc::fields, args, bytes);
    } catch (const std::bad_alloc&) {
      return fail_noalloc(Status::kRuntime, op(), "out of memory while fingerprinting");
    }
    return Status::kSuccess;
  }
};

}  // namespace kvflash::core
