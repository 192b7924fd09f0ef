// The text helpers of the library's messages, once: every validator, binder and shim formats
// integers and dims with these, so the messages of all operators read the same.
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>

namespace kvflash::core {

/// Decimal text of v.
inline std::string str(int64_t v) { return std::to_string(v); }

/// "[d0,d1,...]" of dims.
inline std::string dims_str(std::span<const int64_t> dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(dims[i]);
  }
  return s + "]";
}

/// "%p" of p (a handle in a message).
inline std::string ptr_str(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%p", p);
  return buf;
}

}  // namespace kvflash::core
