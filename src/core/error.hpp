// Failure reporting: every rejection goes through fail(), which records the message for
// last_error_message() on this thread and returns the status.
#pragma once

#include <string>

#include "kvflash/status.hpp"
#include "kvflash/tensor.hpp"

/// Propagates a non-success Status from the current function: the one error-propagation idiom of
/// every validator and plan.
#define KVFLASH_RETURN_IF_ERROR(expr)                                           \
  do {                                                                          \
    const ::kvflash::Status kvflash_status_ = (expr);                           \
    if (kvflash_status_ != ::kvflash::Status::kSuccess) return kvflash_status_; \
  } while (0)

namespace kvflash::core {

/// Records "[op] message" as this thread's last error and returns code.
Status fail(Status code, const std::string& op, const std::string& message);
/// The same without allocating, for paths that handle an allocation failure (std::bad_alloc) and
/// must not throw another: "[op] message" is formatted into the fixed per-thread buffer.
Status fail_noalloc(Status code, const char* op, const char* message) noexcept;
/// Clears this thread's last error (called at the start of each public entry point).
void clear_error();

/// Bytes of memory of the device a plan runs on (the host's physical memory for the CPU
/// backend): a workspace larger than this can never be allocated, so planning refuses it.
uint64_t device_memory_bytes(DeviceType device);

}  // namespace kvflash::core
