// sprintf_s, vsprintf_s, snprintf_s, vsnprintf_s, snprintf_truncated_s, vsnprintf_truncated_s
// (include/securec.h; docs/api.md, "securec"). The conversions are the C library's vsnprintf; these
// functions add the argument checks and what happens to strDest when the output does not fit.
#include <cstdarg>
#include <cstdio>

#include "securec/securec_checks.hpp"

using kvflash::securec::kStringMax;
using kvflash::securec::string_size_ok;

namespace {

// The argument checks of all six: false (strDest cleared when it can be) when they fail.
bool format_args_ok(char* strDest, size_t destMax, const char* format) {
  if (strDest != nullptr && string_size_ok(destMax) && format != nullptr) return true;
  if (strDest != nullptr && string_size_ok(destMax)) strDest[0] = '\0';
  return false;
}

// vsnprintf into strDest's first `room` characters (room <= destMax); the C library's count of
// the full output, negative for an encoding error (then strDest[0] = '\0').
int format_into(char* strDest, size_t room, const char* format, va_list argList) {
  const int n = std::vsnprintf(strDest, room, format, argList);
  if (n < 0) strDest[0] = '\0';
  return n;
}

}  // namespace

extern "C" {

int vsprintf_s(char* strDest, size_t destMax, const char* format, va_list argList) {
  if (!format_args_ok(strDest, destMax, format)) return -1;
  const int n = format_into(strDest, destMax, format, argList);
  if (n < 0) return -1;
  if (static_cast<size_t>(n) >= destMax) {  // did not fit: nothing of it is kept
    strDest[0] = '\0';
    return -1;
  }
  return n;
}

int sprintf_s(char* strDest, size_t destMax, const char* format, ...) {
  va_list args;
  va_start(args, format);
  const int n = vsprintf_s(strDest, destMax, format, args);
  va_end(args);
  return n;
}

int vsnprintf_s(char* strDest, size_t destMax, size_t count, const char* format,
                va_list argList) {
  if (count > kStringMax - 1 && count != static_cast<size_t>(-1)) {
    (void)format_args_ok(strDest, destMax, nullptr);  // clears strDest when it can
    return -1;
  }
  if (!format_args_ok(strDest, destMax, format)) return -1;
  if (count < destMax) {
    // At most count characters: a longer output is kept, truncated, and reported as -1.
    const int n = format_into(strDest, count + 1, format, argList);
    if (n < 0 || static_cast<size_t>(n) > count) return -1;
    return n;
  }
  return vsprintf_s(strDest, destMax, format, argList);
}

int snprintf_s(char* strDest, size_t destMax, size_t count, const char* format, ...) {
  va_list args;
  va_start(args, format);
  const int n = vsnprintf_s(strDest, destMax, count, format, args);
  va_end(args);
  return n;
}

int vsnprintf_truncated_s(char* strDest, size_t destMax, const char* format, va_list argList) {
  if (!format_args_ok(strDest, destMax, format)) return -1;
  const int n = format_into(strDest, destMax, format, argList);
  if (n < 0) return -1;
  if (static_cast<size_t>(n) >= destMax) return static_cast<int>(destMax - 1);
  return n;
}

int snprintf_truncated_s(char* strDest, size_t destMax, const char* format, ...) {
  va_list args;
  va_start(args, format);
  const int n = vsnprintf_truncated_s(strDest, destMax, format, args);
  va_end(args);
  return n;
}

}  // extern "C"
