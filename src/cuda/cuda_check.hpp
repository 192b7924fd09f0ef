// CUDA runtime errors as kvflash statuses: every CUDA runtime call in the library goes through
// KVFLASH_CUDA_TRY, so a failed launch or copy is a kRuntime status with the call and CUDA's own
// message in last_error_message(), never an ignored error code.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "core/error.hpp"

namespace kvflash::cuda {

/// Records "[op] what: cudaErrorName (message)" and returns kRuntime. Clears CUDA's sticky
/// last-error slot for non-sticky errors, so the next call on this thread starts clean.
inline Status cuda_fail(cudaError_t e, const char* op, const char* what) {
  (void)cudaGetLastError();
  return core::fail(Status::kRuntime, op,
                    std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) +
                        ")");
}

}  // namespace kvflash::cuda

/// Returns kRuntime from the current function when the CUDA runtime call `expr` fails; `op` is the
/// operator name for the message ("IncreFlashAttention", "aclrtMemcpy", ...).
#define KVFLASH_CUDA_TRY(op, expr)                                                 \
  do {                                                                             \
    const cudaError_t kvflash_cuda_err_ = (expr);                                  \
    if (kvflash_cuda_err_ != cudaSuccess)                                          \
      return ::kvflash::cuda::cuda_fail(kvflash_cuda_err_, (op), #expr);           \
  } while (0)
