// What every operator's plan holds and does, written once: create = validate the metadata, size
// the workspace for the device's backends, keep the metadata (not the data) to match runs
// against; run = check the workspace, match the tensors, hand them to the first available
// backend. IfaPlan and SfaPlan are thin wrappers over these.
#pragma once

#include <cstddef>
#include <exception>
#include <new>
#include <span>
#include <string>

#include "core/backend.hpp"
#include "core/error.hpp"
#include "kvflash/status.hpp"

namespace kvflash::core {

template <typename Problem, typename Args>
struct PlanState {
  Args meta;  ///< the arguments of create() with every data pointer cleared
  Problem problem;
  size_t workspace_size = 0;  ///< max over the backends of the plan's device
};

/// Operator-specific pieces of the generic plan.
template <typename Problem, typename Args>
struct PlanOps {
  const char* op;  ///< name in messages
  Status (*validate)(const Args& args, Problem* problem);
  /// The arguments to match runs against: data pointers cleared, and what the plan ignores
  /// (given its problem) dropped.
  Args (*strip_data)(const Args& args, const Problem& problem);
  Status (*matches_plan)(const Args& plan, const Args& run);
  std::span<const Backend<Problem, Args>> (*backends)();
};

template <typename Problem, typename Args>
Status plan_create(const PlanOps<Problem, Args>& ops, const Args& args,
                   PlanState<Problem, Args>* state) {
  try {
    KVFLASH_RETURN_IF_ERROR(ops.validate(args, &state->problem));
    const DeviceType device = state->problem.device.type;
    if (!plan_workspace(ops.backends(), device, state->problem, &state->workspace_size)) {
      return fail(
          Status::kRuntime, ops.op,
          "no backend runs on " + device_name(state->problem.device) + " in this build of kvflash");
    }
    // Absurd sizes (zero strides can describe sequences far larger than memory) are refused
    // here, before anything is allocated: no such workspace can ever exist.
    const uint64_t memory = device_memory_bytes(device);
    if (state->workspace_size > memory) {
      return fail(Status::kInvalid, ops.op,
                  "the problem needs a workspace of " + std::to_string(state->workspace_size) +
                      " bytes, more than the " + std::to_string(memory) + " bytes of " +
                      device_name(state->problem.device) +
                      "'s memory: the batch and lengths (actual_seq_lengths, key sizes) are too "
                      "large");
    }
    state->meta = ops.strip_data(args, state->problem);
  } catch (const std::bad_alloc&) {
    return fail_noalloc(Status::kRuntime, ops.op, "out of memory while planning");
  } catch (...) {
    return fail_noalloc(Status::kRuntime, ops.op, "unexpected failure while planning");
  }
  return Status::kSuccess;
}

template <typename Problem, typename Args>
Status plan_run_checked(const PlanOps<Problem, Args>& ops, const PlanState<Problem, Args>& state,
                        const Args& args, void* workspace, size_t workspace_size, void* stream) {
  if (workspace_size < state.workspace_size) {
    return fail(Status::kInvalid, ops.op,
                "workspace_size (" + std::to_string(workspace_size) +
                    ") is smaller than required (" + std::to_string(state.workspace_size) + ")");
  }
  if (workspace == nullptr && state.workspace_size > 0) {
    return fail(
        Status::kNullPtr, ops.op,
        "workspace is null but " + std::to_string(state.workspace_size) + " bytes are required");
  }
  KVFLASH_RETURN_IF_ERROR(ops.matches_plan(state.meta, args));
  const Device device = state.problem.device;
  if (device.type == DeviceType::kHost && stream != nullptr) {
    return fail(Status::kInvalid, ops.op,
                "stream must be null for host tensors (they run synchronously)");
  }
  const auto* backend = select_backend(ops.backends(), device.type);
  if (backend == nullptr) {
    return fail(Status::kRuntime, ops.op, "no backend is available for " + device_name(device));
  }
  try {
    return backend->run(state.problem, args, args.num_threads, workspace, stream);
  } catch (const std::exception& e) {
    // Only a failure to start worker threads can get here; nothing is half-written that a
    // retry would not overwrite.
    return fail(Status::kRuntime, ops.op, std::string("run failed: ") + e.what());
  } catch (...) {
    return fail(Status::kRuntime, ops.op, "run failed");
  }
}

/// The run of a plan. It allocates nothing itself; only the message of a refused run does, and if
/// that fails the run still returns (kRuntime) rather than throw.
template <typename Problem, typename Args>
Status plan_run(const PlanOps<Problem, Args>& ops, const PlanState<Problem, Args>& state,
                const Args& args, void* workspace, size_t workspace_size, void* stream) {
  try {
    return plan_run_checked(ops, state, args, workspace, workspace_size, stream);
  } catch (const std::bad_alloc&) {
    return fail_noalloc(Status::kRuntime, ops.op, "out of memory while reporting a refused run");
  }
}

}  // namespace kvflash::core
