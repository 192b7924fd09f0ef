// Failure reporting: every rejection goes through fail(), which records the message for
// last_error_message() on this thread and returns the status.
#pragma once

#include <string>

#include "kvflash/status.hpp"

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
/// Clears this thread's last error (called at the start of each public entry point).
void clear_error();

}  // namespace kvflash::core
