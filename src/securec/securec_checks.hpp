// What every securec function (include/securec.h) checks first, and the overlap test they share.
#pragma once

#include <cstddef>
#include <cstdint>

#include "securec.h"

namespace kvflash::securec {

inline constexpr size_t kStringMax = 0x7fffffffUL;  // SECUREC_STRING_MAX_LEN as built
inline constexpr size_t kMemMax = 0x7fffffffUL;     // SECUREC_MEM_MAX_LEN as built

/// destMax of a string function is usable: in (0, kStringMax].
inline bool string_size_ok(size_t destMax) { return destMax > 0 && destMax <= kStringMax; }
inline bool memory_size_ok(size_t destMax) { return destMax > 0 && destMax <= kMemMax; }

/// Whether the byte ranges [a, a + a_len) and [b, b + b_len) share a byte (empty ranges share
/// none). Compares addresses as integers, so it is defined for unrelated objects too.
inline bool overlaps(const void* a, size_t a_len, const void* b, size_t b_len) {
  if (a_len == 0 || b_len == 0) return false;
  const uintptr_t pa = reinterpret_cast<uintptr_t>(a);
  const uintptr_t pb = reinterpret_cast<uintptr_t>(b);
  return pa <= pb ? pb - pa < a_len : pa - pb < b_len;
}

/// The length of s, reading at most `limit` characters: `limit` when none of them is '\0'.
inline size_t bounded_length(const char* s, size_t limit) {
  size_t n = 0;
  while (n < limit && s[n] != '\0') ++n;
  return n;
}

}  // namespace kvflash::securec
