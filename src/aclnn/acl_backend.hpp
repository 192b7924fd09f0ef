// Which runtime the ACL entry points (aclrtMalloc, streams, aclnn phase 2, ...) run on, chosen by
// the environment variable KVFLASH_ACL_BACKEND:
//   unset, "" or "cpu"  the CPU runtime (runtime.cpp): "device" memory is host memory, streams are
//                       worker threads. The default.
//   "cuda"              the CUDA runtime (runtime_cuda.cpp): device memory is cudaMalloc'd, streams
//                       are cudaStream_t, aclTensors describe DeviceType::kCuda memory, so the
//                       operators' plans select their CUDA backend entries.
// The variable is read once per process, at the first call that needs the choice (aclInit in a
// CANN program): a runtime cannot change under memory and streams it has handed out.
//
// A choice that cannot be honoured (an unknown value; "cuda" in a build without CUDA; "cuda" on a
// machine without a usable GPU) is an error, never a silent fallback to the CPU: aclInit,
// aclrtSetDevice and every other runtime call then fail with the code and message below.
#pragma once

#include <string>

#include "acl/acl_base.h"
#include "kvflash/tensor.hpp"

namespace kvflash::aclnn {

enum class AclBackend { kCpu, kCuda };

/// The process's choice, as read from the environment.
struct AclBackendChoice {
  AclBackend backend = AclBackend::kCpu;
  aclError error = ACL_SUCCESS;  ///< ACL_SUCCESS when the runtime can be used
  std::string message;           ///< why not (names the variable and its value)
};

/// Parses a KVFLASH_ACL_BACKEND value (null = unset). Accepts exactly "cpu" and "cuda" (and unset
/// or empty, meaning "cpu"); false with *error naming the value and the accepted ones otherwise.
bool parse_acl_backend(const char* value, AclBackend* out, std::string* error);

/// Decides the choice for `value` in this build on this machine: the parse, then, for "cuda",
/// whether the build has CUDA (ACL_ERROR_API_NOT_SUPPORT otherwise) and a device is usable
/// (ACL_ERROR_INVALID_DEVICE with cuda::device_info().reason otherwise). An unknown value is
/// ACL_ERROR_INVALID_PARAM.
AclBackendChoice decide_acl_backend(const char* value);

/// decide_acl_backend(getenv("KVFLASH_ACL_BACKEND")), evaluated once per process.
const AclBackendChoice& acl_backend();

/// True when the process runs the CUDA runtime (the choice is "cuda" and usable).
inline bool cuda_runtime() {
  const AclBackendChoice& c = acl_backend();
  return c.error == ACL_SUCCESS && c.backend == AclBackend::kCuda;
}

/// The device aclCreateTensor records: the host for the CPU runtime, kCuda with the current
/// device (0 when none is set) for the CUDA runtime.
Device acl_tensor_device();

}  // namespace kvflash::aclnn
