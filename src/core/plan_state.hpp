// What every operator's plan holds and does, written once: create = validate the metadata, size
// the workspace for the device's backends, keep the metadata (not the data) to match runs
// against; run = check the workspace, match the tensors, bind their pointers (once, the same for
// every backend), hand them to the first available backend. IfaPlan, SfaPlan and MergePlan are
// thin wrappers over these.
#pragma once

#include <atomic>
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
  /// The entry the last KVFLASH_VERBOSE=dispatch line named, so a plan prints once, and again only
  /// when the choice changes (an ISA cap, a forced entry).
  mutable std::atomic<const void*> dispatched{nullptr};
};

/// Operator-specific pieces of the generic plan.
template <typename Problem, typename Args, typename Data>
struct PlanOps {
  const char* op;  ///< name in messages
  Status (*validate)(const Args& args, Problem* problem);
  /// The arguments to match runs against: data pointers cleared, and what the plan ignores
  /// (given its problem) dropped.
  Args (*strip_data)(const Args& args, const Problem& problem);
  Status (*matches_plan)(const Args& plan, const Args& run);
  /// The run's pointers (element 0 of every present view of the matched args): host pointer
  /// arithmetic only, so it serves every device; backends derive the rest from it.
  void (*bind)(const Problem& problem, const Args& args, Data* data);
  /// The problem's shape in a few words, for KVFLASH_VERBOSE=dispatch (into buf, no allocation).
  void (*describe)(const Problem& problem, char* buf, size_t size);
  std::span<const Backend<Problem, Data>> (*backends)();
  /// The fault record a device run left at the start of a workspace, copied to the host in stream
  /// order (backends/lists.hpp: read_fault_record).
  Status (*read_fault_record)(const char* op, Device device, const void* workspace, void* stream,
                              FaultRecord* record);
};

template <typename Problem, typename Args, typename Data>
Status plan_create(const PlanOps<Problem, Args, Data>& ops, const Args& args,
                   PlanState<Problem, Args>* state) {
  try {
    KVFLASH_RETURN_IF_ERROR(ops.validate(args, &state->problem));
    const DeviceType device = state->problem.device.type;
    if (!plan_workspace(ops.backends(), device, state->problem, &state->workspace_size)) {
      // Entries of the device that do not implement a feature of the problem say which.
      for (const auto& b : ops.backends()) {
        const char* why = nullptr;
        if (b.device == device && !entry_supports(b, state->problem, &why)) {
          return fail(Status::kInvalid, ops.op,
                      std::string(b.name) + " does not support " + (why ? why : "this problem") +
                          " (no other entry runs on " + device_name(state->problem.device) + ")");
        }
      }
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

template <typename Problem, typename Args, typename Data>
Status plan_run_checked(const PlanOps<Problem, Args, Data>& ops,
                        const PlanState<Problem, Args>& state, const Args& args, void* workspace,
                        size_t workspace_size, void* stream) {
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
  const auto list = ops.backends();
  const auto* backend = select_backend(list, device.type, state.problem);
  // The key of "no entry" is the state itself (dispatched starts null: nothing printed yet).
  const void* key = backend != nullptr ? static_cast<const void*>(backend) : &state;
  if (verbose_dispatch() && state.dispatched.exchange(key) != key) {
    char shape[256];
    ops.describe(state.problem, shape, sizeof shape);
    print_dispatch(ops.op, shape, list, device.type, state.problem, backend);
  }
  if (backend == nullptr) {
    return fail(Status::kRuntime, ops.op, "no backend is available for " + device_name(device));
  }
  Data data;
  ops.bind(state.problem, args, &data);
  const RunContext ctx{args.num_threads, workspace, workspace_size, stream};
  try {
    return backend->run(state.problem, data, ctx);
  } catch (const std::exception& e) {
    // Only a failure to start worker threads can get here; nothing is half-written that a
    // retry would not overwrite.
    return fail(Status::kRuntime, ops.op, std::string("run failed: ") + e.what());
  } catch (...) {
    return fail(Status::kRuntime, ops.op, "run failed");
  }
}

/// The entry whose fault hook decodes the plan's records: the one its runs use (select_backend),
/// when it has a hook; otherwise null (host plans: their runs return every fault themselves).
template <typename Problem, typename Args, typename Data>
const Backend<Problem, Data>* plan_fault_entry(const PlanOps<Problem, Args, Data>& ops,
                                               const PlanState<Problem, Args>& state) {
  const auto* backend = select_backend(ops.backends(), state.problem.device.type, state.problem);
  return backend != nullptr && backend->fault_status != nullptr ? backend : nullptr;
}

/// Plan::status (core/plan_handle.hpp): kSuccess for host plans (nothing read); for a device plan,
/// its entry's hook on the fault record of the run queued with workspace on stream, read back in
/// stream order.
template <typename Problem, typename Args, typename Data>
Status plan_status(const PlanOps<Problem, Args, Data>& ops, const PlanState<Problem, Args>& state,
                   const void* workspace, void* stream) {
  const Device device = state.problem.device;
  if (device.type == DeviceType::kHost) return Status::kSuccess;
  const auto* backend = plan_fault_entry(ops, state);
  if (backend == nullptr) {
    if (select_backend(ops.backends(), device.type, state.problem) != nullptr) {
      return Status::kSuccess;
    }
    return fail(Status::kRuntime, ops.op, "no backend is available for " + device_name(device));
  }
  if (workspace == nullptr) {
    return fail(Status::kNullPtr, ops.op,
                "workspace is null: status() reads the fault record a run left in its workspace");
  }
  FaultRecord record;
  KVFLASH_RETURN_IF_ERROR(ops.read_fault_record(ops.op, device, workspace, stream, &record));
  return backend->fault_status(state.problem, record);
}

/// The run of a plan. It allocates nothing itself; only the message of a refused run does, and if
/// that fails the run still returns (kRuntime) rather than throw.
template <typename Problem, typename Args, typename Data>
Status plan_run(const PlanOps<Problem, Args, Data>& ops, const PlanState<Problem, Args>& state,
                const Args& args, void* workspace, size_t workspace_size, void* stream) {
  try {
    return plan_run_checked(ops, state, args, workspace, workspace_size, stream);
  } catch (const std::bad_alloc&) {
    return fail_noalloc(Status::kRuntime, ops.op, "out of memory while reporting a refused run");
  }
}

}  // namespace kvflash::core
