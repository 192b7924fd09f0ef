// The argument checks and error reporting shared by the CPU runtime (runtime.cpp) and the CUDA
// runtime (runtime_cuda.cpp): both give the same codes and messages for the same misuse.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "acl/acl.h"
#include "aclnn/acl_backend.hpp"
#include "aclnn/stream.hpp"
#include "core/strings.hpp"

/// The CUDA runtime's part of a runtime entry point (runtime_cuda.hpp), after the checks both
/// runtimes share: returns expr when the process runs the CUDA runtime. Compiled out without CUDA,
/// where cuda_runtime() is never true (and runtime_cuda.cpp defines nothing).
namespace kvflash::aclnn {

/// Records "[acl] message (aclError code)" for aclGetRecentErrMsg and returns code.
aclError rt_fail(aclError code, const std::string& message);
/// ACL_SUCCESS when the runtime KVFLASH_ACL_BACKEND chose can be used; otherwise its code, with
/// the reason recorded for fn. Every runtime entry point starts with it (acl_backend.hpp).
aclError runtime_ready(const char* fn);
using core::ptr_str;
/// ACL_ERROR_INVALID_PARAM, recorded as "fn: <handle> is not a live <what>".
aclError not_live(const char* fn, const void* handle, const char* what);
/// ACL_ERROR_INVALID_PARAM (recorded) unless policy is an aclrtMemMallocPolicy.
aclError check_malloc_policy(const char* fn, int32_t policy);
/// The checks before any allocation: slot not null (then *ptr = nullptr), size > 0.
aclError check_alloc(const char* fn, void** ptr, size_t size);
/// kind is an aclrtMemcpyKind, count <= dest_max, non-null pointers when count > 0.
aclError check_memcpy(const char* fn, void* dst, size_t dest_max, const void* src, size_t count,
                      int32_t kind);
/// count <= max_count, non-null pointer when count > 0.
aclError check_memset(const char* fn, void* ptr, size_t max_count, size_t count);
/// Reports a stream's failure on the calling thread: a failure with kInvalid is an operator whose
/// run found bad device data, the code CANN gives a kernel fault (ACL_ERROR_RT_AICORE_EXCEPTION);
/// any other is ACL_ERROR_INTERNAL_ERROR.
aclError report(const char* fn, const std::optional<Stream::Failure>& failure);

}  // namespace kvflash::aclnn
