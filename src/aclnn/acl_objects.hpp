// The objects behind the opaque aclnn handles, and the small internal API every aclnn operator
// shim is written against (IFA here, SFA in aclnn_sparse_flash_attention*.cpp):
//
//   aclnnStatus aclnnFooGetWorkspaceSize(..., uint64_t* workspaceSize, aclOpExecutor** executor) {
//     core::clear_error();
//     if (!workspaceSize || !executor) return null_arg(kOp, ...);   // *executor = nullptr first
//     TensorView q; if (auto s = tensor_view(kOp, "query", query, &q); s != Status::kSuccess) ...
//     ... create the plan ...
//     ExecutorWork work{kOp, plan->workspace_size(), check_fn, run_fn};
//     *executor = make_executor(std::move(work)); *workspaceSize = ...; return ACLNN_SUCCESS;
//   }
//   aclnnStatus aclnnFoo(void* ws, uint64_t n, aclOpExecutor* e, aclrtStream s) {
//     return launch(kOp, ws, n, e, s);
//   }
//
// Handles given to callers are checked against registries before use, so a destroyed or foreign
// pointer is an error code, never a use-after-free.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnn/acl_meta.h"
#include "core/device_fault.hpp"
#include "core/error.hpp"
#include "kvflash/status.hpp"
#include "kvflash/tensor.hpp"
#include "ops/plan_faults.hpp"

/// A tensor descriptor. `view` carries the view dims, strides, offset and data exactly as given
/// to aclCreateTensor; view.dtype holds the aclDataType value even when kvflash has no such
/// DType (tensor_view() rejects those when an operator reads the tensor).
struct aclTensor {
  kvflash::TensorView view;
  int32_t acl_dtype = ACL_DT_UNDEFINED;  ///< the aclDataType as given (any int: see raw_enum)
  int32_t format = ACL_FORMAT_ND;        ///< the aclFormat as given
  std::vector<int64_t> storage_dims;
};

/// Owns copies of the descriptors it was made from; a null input entry stays null.
struct aclTensorList {
  std::vector<std::unique_ptr<aclTensor>> tensors;
};

/// A host array, copied at creation.
struct aclIntArray {
  std::vector<int64_t> values;
};

namespace kvflash::aclnn {

/// The value of a C enum parameter (aclDataType, aclFormat, aclrtMemcpyKind, ...) as the int a C
/// caller passed. A C program may pass any int; in C++ an enum object holding a value outside its
/// enumerators' range must not be read as the enum (undefined behaviour, which UBSan reports), so
/// the entry points read its bytes.
template <typename Enum>
int32_t raw_enum(const Enum& e) {
  static_assert(sizeof(Enum) == sizeof(int32_t), "the C enums of the ACL headers are int-sized");
  int32_t v;
  std::memcpy(&v, &e, sizeof(v));
  return v;
}

class Stream;
/// Declared with its reason in stream.hpp.
void pay_owed_wakes(const Stream* except);

/// The body of a C entry point: no exception crosses the C boundary. std::bad_alloc, and the
/// std::system_error of a stream thread that cannot start, become `on_error` with the reason
/// recorded for aclGetRecentErrMsg without allocating. First it wakes the stream workers that
/// launches left asleep (pay_owed_wakes), unless `pay_wakes` is false (aclrtSynchronizeStream,
/// which pays all but its own stream's).
template <typename R, typename F>
R c_entry(const char* fn, R on_error, F&& body, bool pay_wakes = true) noexcept {
  try {
    if (pay_wakes) pay_owed_wakes(nullptr);
    return body();
  } catch (const std::bad_alloc&) {
    core::fail_noalloc(Status::kRuntime, fn, "out of memory");
  } catch (const std::exception& e) {
    core::fail_noalloc(Status::kRuntime, fn, e.what());
  } catch (...) {
    core::fail_noalloc(Status::kRuntime, fn, "unexpected exception");
  }
  return on_error;
}

// ---- handle registries ---------------------------------------------------------------------

/// True if t / l / a is a live object created by aclCreateTensor / aclCreateTensorList /
/// aclCreateIntArray and not yet destroyed.
bool is_live(const aclTensor* t);
bool is_live(const aclTensorList* l);
bool is_live(const aclIntArray* a);

// ---- argument conversion (each failure is recorded with core::fail) ------------------------

/// Required tensor: null -> kNullPtr; dead handle or dtype unknown to kvflash -> kInvalid.
Status tensor_view(const char* op, const char* arg, const aclTensor* t, TensorView* out);
/// Optional tensor: null -> nullopt (success); otherwise as tensor_view().
Status optional_view(const char* op, const char* arg, const aclTensor* t,
                     std::optional<TensorView>* out);
/// Required tensor list: null list or null element -> kNullPtr; otherwise each as tensor_view().
Status tensor_list_views(const char* op, const char* arg, const aclTensorList* l,
                         std::vector<TensorView>* out);
/// Optional host array: null -> nullopt; a dead handle -> kInvalid. The values are copied.
Status optional_int_array(const char* op, const char* arg, const aclIntArray* a,
                          std::optional<std::vector<int64_t>>* out);
/// The aclnn code of a kvflash status (the same values: kvflash/status.h), the one conversion
/// from Status to aclnnStatus of the C entry points.
inline aclnnStatus to_aclnn(Status s) { return static_cast<aclnnStatus>(s); }
/// Records "<arg> must not be null" and returns kNullPtr as an aclnnStatus.
aclnnStatus null_arg(const char* op, const char* arg);
/// An fp32 output is an extension of kvflash's C++ API (the result before rounding); aclnn keeps
/// upstream's dtype rule: kInvalid "<arg> dtype fp32 is not supported; expected <upstream>" when
/// out is fp32, else ACLNN_SUCCESS.
aclnnStatus refuse_fp32_output(const char* op, const char* arg, const TensorView& out,
                               const char* upstream);

// ---- executors and phase 2 -----------------------------------------------------------------

/// One operator call prepared by phase 1. run receives phase 2's workspace pointer and size; it
/// must capture (by value / shared_ptr) everything it needs.
struct ExecutorWork {
  std::string op;               ///< operator name used in messages, e.g. "incre_flash_attention"
  uint64_t workspace_size = 0;  ///< what phase 1 reported
  /// The computation. On the CPU runtime it runs on the stream's worker thread in stream order
  /// (device_stream null): it is the first to read device data (block tables, indices,
  /// device-side lengths). On the CUDA runtime it runs on the launching thread with the
  /// cudaStream_t as device_stream and only queues kernels (runtime_cuda.hpp). Either way a
  /// failure is reported by aclrtSynchronizeStream with the message.
  std::function<Status(void* workspace, uint64_t workspace_size, void* device_stream)> run;
  /// Set when run writes a device fault record at the start of its workspace
  /// (core/device_fault.hpp; the plan of a device entry with a fault hook): the status of a host
  /// copy of it. The CUDA runtime queues that copy after each run and calls this at the stream's
  /// synchronisation (runtime_cuda.hpp). Null: run returns every fault itself.
  std::function<Status(const core::FaultRecord& record)> decode_fault;
};

/// Registers a single-use executor and returns its handle (an opaque id, never reused).
aclOpExecutor* make_executor(ExecutorWork work);

/// What the executors of one planned call run: the converted arguments and their plan. Never
/// changed once made (IfaPlan::run and the other plans' run are const), so executors of identical
/// calls may share one (plan_executor_reusing) and run it on several streams at once.
template <typename Plan, typename Args>
struct PlannedCall {
  Args args;
  std::unique_ptr<Plan> plan;
};

/// A single-use executor whose work runs call's plan on call's tensors, on the stream, in stream
/// order; *workspace_size is the plan's.
template <typename Plan, typename Args>
aclnnStatus executor_of(const char* op, std::shared_ptr<const PlannedCall<Plan, Args>> call,
                        uint64_t* workspace_size, aclOpExecutor** executor) {
  ExecutorWork work;
  work.op = op;
  work.workspace_size = call->plan->workspace_size();
  // Asked per executor, not kept with a reused plan: the entry a run takes follows the ISA cap
  // (KVFLASH_MAX_ISA, cpu::set_isa_cap), which may change between calls.
  if (plan_writes_fault_record(*call->plan)) {
    work.decode_fault = [call](const core::FaultRecord& record) {
      return plan_decode_fault(*call->plan, record);
    };
  }
  work.run = [call = std::move(call)](void* ws, uint64_t size, void* device_stream) {
    return call->plan->run(call->args, ws, static_cast<size_t>(size), device_stream);
  };
  const uint64_t size = work.workspace_size;
  *executor = make_executor(std::move(work));
  *workspace_size = size;
  return ACLNN_SUCCESS;
}

/// The common tail of phase 1 for an operator with a kvflash plan (IfaPlan, SfaPlan): plans the
/// converted arguments (metadata only) and returns a single-use executor whose work runs the plan
/// on those arguments' tensors, on the stream, in stream order.
template <typename Plan, typename Args>
aclnnStatus plan_executor(const char* op, Args args, uint64_t* workspace_size,
                          aclOpExecutor** executor) {
  auto call = std::make_shared<PlannedCall<Plan, Args>>();
  call->args = std::move(args);
  if (Status s = Plan::create(call->args, &call->plan); s != Status::kSuccess) return to_aclnn(s);
  return executor_of<Plan, Args>(op, std::move(call), workspace_size, executor);
}

/// plan_executor for an operator whose Plan::create is a function of its arguments alone (it
/// reads no setting, environment variable or other process state; IFA: see
/// aclnn_incre_flash_attention.cpp): a call whose arguments are the same as those of the last
/// successful plan of this operator (same(a, b): identical in every member, data pointers
/// included) gets an executor of that plan instead of planning again, since planning would give
/// the same result. A CANN program calls phase 1 before every launch of a decode step whose
/// shapes, lengths and buffers stay the same; planning is the largest part of phase 1 (0.8 of
/// 1.5 us at 16 tokens, 25 of 50 us after a cache flush at 4k: docs/perf-log.md). The last plan is
/// kept process-wide, never destroyed (phase 1 may run in a static destructor); its lock is only
/// tried (a thread that finds it taken plans, and a forked child never waits on it).
template <typename Plan, auto kSame, typename Args>
aclnnStatus plan_executor_reusing(const char* op, Args args, uint64_t* workspace_size,
                                  aclOpExecutor** executor) {
  using Call = PlannedCall<Plan, Args>;
  struct Last {
    std::mutex mu;
    std::shared_ptr<const Call> call;
  };
  static Last* const last = new Last;
  std::shared_ptr<const Call> previous;
  {
    std::unique_lock<std::mutex> lock(last->mu, std::try_to_lock);
    if (lock.owns_lock()) previous = last->call;
  }
  if (previous && kSame(previous->args, args))
    return executor_of<Plan, Args>(op, std::move(previous), workspace_size, executor);
  auto call = std::make_shared<Call>();
  call->args = std::move(args);
  if (Status s = Plan::create(call->args, &call->plan); s != Status::kSuccess) return to_aclnn(s);
  std::shared_ptr<const Call> shared = std::move(call);
  std::shared_ptr<const Call> replaced = shared;
  {
    std::unique_lock<std::mutex> lock(last->mu, std::try_to_lock);
    if (lock.owns_lock()) last->call.swap(replaced);
  }
  replaced.reset();  // the plan replaced, when no executor holds it, is freed outside the lock
  return executor_of<Plan, Args>(op, std::move(shared), workspace_size, executor);
}

/// The common phase 2: null executor -> 161001; an executor that is not live (consumed,
/// destroyed, never created) -> 161002; workspace_size below phase 1's -> 161002; null workspace
/// with a nonzero requirement -> 161001; dead stream handle -> 161002. Nothing here reads device
/// data. A rejected call leaves the executor usable. On success the executor is consumed
/// (unless repeatable) and run() is enqueued on stream (null = the default stream).
aclnnStatus launch(const char* op, void* workspace, uint64_t workspace_size,
                   aclOpExecutor* executor, aclrtStream stream);

}  // namespace kvflash::aclnn
