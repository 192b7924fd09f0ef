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

/// The common tail of phase 1 for an operator with a kvflash plan (IfaPlan, SfaPlan): plans the
/// converted arguments (metadata only) and returns a single-use executor whose work runs the plan
/// on those arguments' tensors, on the stream, in stream order.
template <typename Plan, typename Args>
aclnnStatus plan_executor(const char* op, Args args, uint64_t* workspace_size,
                          aclOpExecutor** executor) {
  struct State {
    Args args;
    std::unique_ptr<Plan> plan;
  };
  auto state = std::make_shared<State>();
  state->args = std::move(args);
  if (Status s = Plan::create(state->args, &state->plan); s != Status::kSuccess) return to_aclnn(s);
  ExecutorWork work;
  work.op = op;
  work.workspace_size = state->plan->workspace_size();
  work.run = [state](void* ws, uint64_t size, void* device_stream) {
    return state->plan->run(state->args, ws, static_cast<size_t>(size), device_stream);
  };
  if (plan_writes_fault_record(*state->plan)) {
    work.decode_fault = [state](const core::FaultRecord& record) {
      return plan_decode_fault(*state->plan, record);
    };
  }
  const uint64_t size = work.workspace_size;
  *executor = make_executor(std::move(work));
  *workspace_size = size;
  return ACLNN_SUCCESS;
}

/// The common phase 2: null executor -> 161001; an executor that is not live (consumed,
/// destroyed, never created) -> 161002; workspace_size below phase 1's -> 161002; null workspace
/// with a nonzero requirement -> 161001; dead stream handle -> 161002. Nothing here reads device
/// data. A rejected call leaves the executor usable. On success the executor is consumed
/// (unless repeatable) and run() is enqueued on stream (null = the default stream).
aclnnStatus launch(const char* op, void* workspace, uint64_t workspace_size,
                   aclOpExecutor* executor, aclrtStream stream);

}  // namespace kvflash::aclnn
