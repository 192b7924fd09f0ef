// strcpy_s, strncpy_s, strcat_s, strncat_s (include/securec.h; the rules and their order are in
// docs/api.md, "securec").
//
// Each function reads the source only as far as the destination could hold it, so an
// unterminated source is a range error, never a read past its end; an overlap is judged on the
// bytes actually read (the copied characters, plus the terminator when it was reached) against
// the bytes that would be written (the copied characters and the new terminator).
#include <algorithm>
#include <cstring>

#include "securec/securec_checks.hpp"

using kvflash::securec::bounded_length;
using kvflash::securec::kStringMax;
using kvflash::securec::overlaps;
using kvflash::securec::string_size_ok;

namespace {

// The checks every string function starts with: EOK when the rest may proceed.
errno_t check_string_args(char* strDest, size_t destMax, const char* strSrc) {
  if (!string_size_ok(destMax)) return ERANGE;
  if (strDest == nullptr) return EINVAL;
  if (strSrc == nullptr) {
    strDest[0] = '\0';
    return EINVAL_AND_RESET;
  }
  return EOK;
}

errno_t fail(char* strDest, errno_t code) {
  strDest[0] = '\0';
  return code;
}

// Copies at most `limit` characters of strSrc to strDest (destMax characters) and terminates:
// the shared body of strcpy_s (limit = destMax) and strncpy_s.
errno_t copy_bounded(char* strDest, size_t destMax, const char* strSrc, size_t limit) {
  const size_t scan = std::min(limit, destMax);
  const size_t n = bounded_length(strSrc, scan);
  if (n == destMax) return fail(strDest, ERANGE_AND_RESET);  // no room for the terminator
  if (strDest == strSrc) {
    strDest[n] = '\0';
    return EOK;
  }
  const size_t read = n < scan ? n + 1 : n;  // the terminator was read when found
  if (overlaps(strDest, n + 1, strSrc, read)) return fail(strDest, EOVERLAP_AND_RESET);
  std::memcpy(strDest, strSrc, n);
  strDest[n] = '\0';
  return EOK;
}

// Appends at most `limit` characters of strSrc to the string in strDest: the shared body of
// strcat_s (limit = destMax) and strncat_s.
errno_t append_bounded(char* strDest, size_t destMax, const char* strSrc, size_t limit) {
  const size_t dest_len = bounded_length(strDest, destMax);
  if (dest_len == destMax) return fail(strDest, EINVAL_AND_RESET);  // strDest is unterminated
  const size_t room = destMax - dest_len;  // >= 1: characters left, terminator included
  const size_t scan = std::min(limit, room);
  const size_t n = bounded_length(strSrc, scan);
  const size_t read = n < scan ? n + 1 : n;
  char* const end = strDest + dest_len;
  // Appending a string to itself always overlaps (its terminator is where the copy starts).
  if (strDest == strSrc) return fail(strDest, EOVERLAP_AND_RESET);
  if (n == room) return fail(strDest, ERANGE_AND_RESET);  // no room for the terminator
  if (overlaps(end, n + 1, strSrc, read)) return fail(strDest, EOVERLAP_AND_RESET);
  std::memcpy(end, strSrc, n);
  end[n] = '\0';
  return EOK;
}

}  // namespace

extern "C" {

errno_t strcpy_s(char* strDest, size_t destMax, const char* strSrc) {
  const errno_t rc = check_string_args(strDest, destMax, strSrc);
  if (rc != EOK) return rc;
  return copy_bounded(strDest, destMax, strSrc, destMax);
}

errno_t strncpy_s(char* strDest, size_t destMax, const char* strSrc, size_t count) {
  const errno_t rc = check_string_args(strDest, destMax, strSrc);
  if (rc != EOK) return rc;
  if (count > kStringMax) return fail(strDest, ERANGE_AND_RESET);
  return copy_bounded(strDest, destMax, strSrc, count);
}

errno_t strcat_s(char* strDest, size_t destMax, const char* strSrc) {
  const errno_t rc = check_string_args(strDest, destMax, strSrc);
  if (rc != EOK) return rc;
  return append_bounded(strDest, destMax, strSrc, destMax);
}

errno_t strncat_s(char* strDest, size_t destMax, const char* strSrc, size_t count) {
  const errno_t rc = check_string_args(strDest, destMax, strSrc);
  if (rc != EOK) return rc;
  if (count > kStringMax) return fail(strDest, ERANGE_AND_RESET);
  return append_bounded(strDest, destMax, strSrc, count);
}

}  // extern "C"
