// Failure reporting: every rejection goes through fail(), which records the message for
// last_error_message() on this thread and returns the status.
#pragma once

#include <string>

#include "kvflash/status.hpp"

namespace kvflash::core {

/// Records "[op] message" as this thread's last error and returns code.
Status fail(Status code, const std::string& op, const std::string& message);
/// Clears this thread's last error (called at the start of each public entry point).
void clear_error();

}  // namespace kvflash::core
