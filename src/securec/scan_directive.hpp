// One conversion specification of a scanf format ("%*12lld", "%[^,]", "%%"), parsed: what
// sscanf_s (securec_scan.cpp) acts on and what it hands to the C library for the numeric
// conversions.
#pragma once

#include <cstddef>
#include <string>

namespace kvflash::securec {

enum class ScanLength { kNone, kHH, kH, kL, kLL, kJ, kZ, kT, kLongDouble };

struct ScanDirective {
  bool suppress = false;           // '*': converted, not assigned
  size_t width = 0;                // 0: none given (as the C library treats an explicit 0)
  ScanLength length = ScanLength::kNone;
  std::string length_text;         // the length modifier as written ("ll", "h", ...)
  char conversion = '\0';          // 'd', 's', '[', '%', ...
  bool in_set[256] = {};           // %[: the characters the scanset accepts
  bool unsupported = false;        // a form sscanf_s refuses (docs/api.md): positional "%1$d",
                                   // the allocating 'm', wide %lc / %ls / %l[
  bool malformed = false;          // no conversion character, an unknown one, an unclosed %[
};

/// Parses the directive whose '%' is at format[0]; sets *consumed to the characters it spans.
ScanDirective parse_scan_directive(const char* format, size_t* consumed);

/// Whether the conversion takes a (buffer, size) pair: %c, %s and %[.
inline bool takes_buffer(char conversion) {
  return conversion == 'c' || conversion == 's' || conversion == '[';
}

}  // namespace kvflash::securec
