#include "core/backend.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace kvflash::core {
namespace {

bool env_names_dispatch() {
  const char* v = std::getenv("KVFLASH_VERBOSE");
  if (v == nullptr) return false;
  // A comma-separated list of topics: "dispatch" must be one item of it, not a substring.
  for (const char* at = v; *at != '\0';) {
    const char* end = std::strchr(at, ',');
    const size_t n = end != nullptr ? static_cast<size_t>(end - at) : std::strlen(at);
    if (n == 8 && std::strncmp(at, "dispatch", 8) == 0) return true;
    if (end == nullptr) break;
    at = end + 1;
  }
  return false;
}

}  // namespace

std::atomic<const char*>& forced_backend_name() {
  static std::atomic<const char*> name{nullptr};
  return name;
}

bool backend_named(const char* entry, const char* name) { return std::strcmp(entry, name) == 0; }

bool verbose_dispatch() {
  static const bool on = env_names_dispatch();
  return on;
}

DispatchLine::DispatchLine(const char* op, const char* shape) {
  append("kvflash dispatch: ");
  append(op);
  append(" (");
  append(shape);
  append("):");
}

void DispatchLine::skipped(const char* name, const char* why) {
  append(" ");
  append(name);
  append(" skipped (");
  append(why);
  append("),");
}

void DispatchLine::print(const char* chosen) {
  append(chosen != nullptr ? " ran " : " no entry available");
  if (chosen != nullptr) append(chosen);
  buf_[n_++] = '\n';  // append keeps one byte for it
  std::fwrite(buf_, 1, n_, stderr);
}

// Truncates rather than overflows, keeping one byte for the newline (a line is a few hundred
// bytes).
void DispatchLine::append(const char* text) {
  const size_t room = sizeof(buf_) - 1 - n_;
  const size_t len = std::min(std::strlen(text), room);
  std::memcpy(buf_ + n_, text, len);
  n_ += len;
}

}  // namespace kvflash::core
