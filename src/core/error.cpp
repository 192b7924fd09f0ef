#include "core/error.hpp"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>

#include "kvflash/status.h"

namespace kvflash::core {
namespace {

// A plain buffer, not a std::string: a trivially destructible thread_local is never destroyed, so
// the message stays usable after this thread's thread_local destructors have run (main's run at
// exit, before the program's static destructors, which may still call kvflash and fail).
constexpr size_t kMaxMessage = 4096;
thread_local char t_last_error[kMaxMessage];

}  // namespace

Status fail(Status code, const std::string& op, const std::string& message) {
  const int n = std::snprintf(t_last_error, kMaxMessage, "[%s] %s", op.c_str(), message.c_str());
  if (n >= static_cast<int>(kMaxMessage)) std::memcpy(t_last_error + kMaxMessage - 4, "...", 4);
  return code;
}

Status fail_noalloc(Status code, const char* op, const char* message) noexcept {
  const int n = std::snprintf(t_last_error, kMaxMessage, "[%s] %s", op, message);
  if (n >= static_cast<int>(kMaxMessage)) std::memcpy(t_last_error + kMaxMessage - 4, "...", 4);
  return code;
}

void clear_error() { t_last_error[0] = '\0'; }

uint64_t device_memory_bytes(DeviceType device) {
  if (device != DeviceType::kHost) return UINT64_MAX;  // no other backend in this build
  static const uint64_t bytes = [] {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page)
                                 : UINT64_MAX;
  }();
  return bytes;
}

}  // namespace kvflash::core

namespace kvflash {
const char* last_error_message() { return core::t_last_error; }
}  // namespace kvflash

extern "C" const char* kvflash_last_error_message(void) { return kvflash::last_error_message(); }
