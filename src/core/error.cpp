#include "core/error.hpp"

#include "kvflash/status.h"

namespace kvflash::core {
thread_local std::string t_last_error;

Status fail(Status code, const std::string& op, const std::string& message) {
  // Built by append: GCC 12 misreports operator+ chains on strings under -Wrestrict.
  t_last_error.clear();
  t_last_error.reserve(op.size() + message.size() + 3);
  t_last_error.append("[").append(op).append("] ").append(message);
  return code;
}

void clear_error() { t_last_error.clear(); }

}  // namespace kvflash::core

namespace kvflash {
const char* last_error_message() { return core::t_last_error.c_str(); }
}  // namespace kvflash

extern "C" const char* kvflash_last_error_message(void) { return kvflash::last_error_message(); }
