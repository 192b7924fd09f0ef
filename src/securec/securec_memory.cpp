// memcpy_s, memmove_s, memset_s (include/securec.h; the rules and their order are in docs/api.md,
// "securec").
#include <cstring>

#include "securec/securec_checks.hpp"

using kvflash::securec::memory_size_ok;
using kvflash::securec::overlaps;

namespace {

// The checks memcpy_s and memmove_s share: EOK when the copy may proceed.
errno_t check_copy(void* dest, size_t destMax, const void* src, size_t count) {
  if (!memory_size_ok(destMax)) return ERANGE;
  if (dest == nullptr) return EINVAL;
  if (src == nullptr) {
    std::memset(dest, 0, destMax);
    return EINVAL_AND_RESET;
  }
  if (count > destMax) {
    std::memset(dest, 0, destMax);
    return ERANGE_AND_RESET;
  }
  return EOK;
}

}  // namespace

extern "C" {

errno_t memcpy_s(void* dest, size_t destMax, const void* src, size_t count) {
  const errno_t rc = check_copy(dest, destMax, src, count);
  if (rc != EOK || count == 0 || dest == src) return rc;
  if (overlaps(dest, count, src, count)) {
    std::memset(dest, 0, destMax);
    return EOVERLAP_AND_RESET;
  }
  std::memcpy(dest, src, count);
  return EOK;
}

errno_t memmove_s(void* dest, size_t destMax, const void* src, size_t count) {
  const errno_t rc = check_copy(dest, destMax, src, count);
  if (rc != EOK || count == 0) return rc;
  std::memmove(dest, src, count);
  return EOK;
}

errno_t memset_s(void* dest, size_t destMax, int c, size_t count) {
  if (!memory_size_ok(destMax)) return ERANGE;
  if (dest == nullptr) return EINVAL;
  if (count > destMax) {
    std::memset(dest, c, destMax);
    return ERANGE_AND_RESET;
  }
  std::memset(dest, c, count);
  return EOK;
}

}  // extern "C"
