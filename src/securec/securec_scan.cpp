// sscanf_s and vsscanf_s (include/securec.h; docs/api.md, "securec").
//
// The format is walked directive by directive. White space, literal characters, %%, %n and the
// buffer conversions (%c, %s, %[, which take a size after the pointer) are handled here, where the
// size is enforced. Each numeric conversion (%d %i %o %u %x %X %a %e %f %g %p, with their width
// and length modifier) is handed to the C library's sscanf on the rest of the input, with a %n
// after it to learn how much it read: the numbers are exactly the C library's.
//
// The result follows the C library's scanf: the number of items assigned, or -1 when the input
// ends before the first assignment; plus securec's rules: -1 for a null or empty buffer, a null
// destination, a buffer size of 0 and the forms refused (scan_directive.hpp), and a field that
// does not fit its buffer stores "" there and ends the scan.
#include <cctype>
#include <climits>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "securec/scan_directive.hpp"
#include "securec/securec_checks.hpp"

using kvflash::securec::kStringMax;
using kvflash::securec::parse_scan_directive;
using kvflash::securec::ScanDirective;
using kvflash::securec::ScanLength;
using kvflash::securec::takes_buffer;

namespace {

constexpr int kFailed = -1;

bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }

// The buffer size that follows a buffer pointer: passed as size_t, or as an int or unsigned that
// the calling convention widens to a register; the low 32 bits are the size (as securec reads it).
size_t buffer_size_arg(va_list* args) {
  return static_cast<size_t>(va_arg(*args, size_t)) & 0xffffffffu;
}

// Stores a %n count with the directive's length modifier.
void store_count(const ScanDirective& d, void* ptr, size_t count) {
  const auto n = static_cast<long long>(count);
  switch (d.length) {
    case ScanLength::kHH: *static_cast<signed char*>(ptr) = static_cast<signed char>(n); break;
    case ScanLength::kH: *static_cast<short*>(ptr) = static_cast<short>(n); break;
    case ScanLength::kL: *static_cast<long*>(ptr) = static_cast<long>(n); break;
    case ScanLength::kLL: *static_cast<long long*>(ptr) = n; break;
    case ScanLength::kJ: *static_cast<intmax_t*>(ptr) = static_cast<intmax_t>(n); break;
    case ScanLength::kZ: *static_cast<size_t*>(ptr) = count; break;
    case ScanLength::kT: *static_cast<ptrdiff_t*>(ptr) = static_cast<ptrdiff_t>(n); break;
    default: *static_cast<int*>(ptr) = static_cast<int>(n); break;
  }
}

class Scanner {
 public:
  Scanner(const char* input, va_list* args) : in_(input), args_(args) {}

  int run(const char* format) {
    const char* f = format;
    while (*f != '\0') {
      if (is_space(*f)) {
        while (is_space(*f)) ++f;
        skip_space();
        continue;
      }
      if (*f != '%') {
        if (in_[pos_] == '\0') return input_failure();
        if (in_[pos_] != *f) return assigned_;  // matching failure
        ++pos_;
        ++f;
        continue;
      }
      size_t consumed = 0;
      const ScanDirective d = parse_scan_directive(f, &consumed);
      f += consumed;
      if (d.unsupported) return kFailed;
      if (d.malformed) return assigned_;
      const int step = directive(d);
      if (step != kContinue) return step;
    }
    return assigned_;
  }

 private:
  static constexpr int kContinue = INT_MIN;

  void skip_space() {
    while (is_space(in_[pos_])) ++pos_;
  }
  int input_failure() const { return assigned_ == 0 ? kFailed : assigned_; }

  // One conversion: kContinue, or the value sscanf_s returns.
  int directive(const ScanDirective& d) {
    switch (d.conversion) {
      case '%':
        skip_space();
        if (in_[pos_] == '\0') return input_failure();
        if (in_[pos_] != '%') return assigned_;
        ++pos_;
        return kContinue;
      case 'n': {
        if (d.suppress) return kContinue;
        void* ptr = va_arg(*args_, void*);
        if (ptr == nullptr) return kFailed;
        store_count(d, ptr, pos_);
        return kContinue;
      }
      default:
        return takes_buffer(d.conversion) ? buffer_field(d) : numeric_field(d);
    }
  }

  // %c, %s, %[: up to the field width (1 for %c), into a buffer of the size given.
  int buffer_field(const ScanDirective& d) {
    char* buffer = nullptr;
    size_t size = 0;
    if (!d.suppress) {
      buffer = va_arg(*args_, char*);
      size = buffer_size_arg(args_);
      if (buffer == nullptr || size == 0) return kFailed;
    }
    if (d.conversion == 's') skip_space();
    if (in_[pos_] == '\0') return input_failure();
    const size_t width = d.width != 0 ? d.width : (d.conversion == 'c' ? 1 : SIZE_MAX);
    size_t n = 0;
    while (n < width && in_[pos_ + n] != '\0' && accepts(d, in_[pos_ + n])) ++n;
    if (n == 0) return assigned_;  // %s cannot be empty here; an empty %[ is a matching failure
    if (d.suppress) {
      pos_ += n;
      return kContinue;
    }
    const size_t needed = d.conversion == 'c' ? n : n + 1;  // %c stores no terminator
    if (needed > size) {
      buffer[0] = '\0';  // the field does not fit: it is dropped, and the scan ends
      return assigned_;
    }
    std::memcpy(buffer, in_ + pos_, n);
    if (d.conversion != 'c') buffer[n] = '\0';
    pos_ += n;
    ++assigned_;
    return kContinue;
  }

  static bool accepts(const ScanDirective& d, char c) {
    switch (d.conversion) {
      case 'c': return true;
      case 's': return !is_space(c);
      default: return d.in_set[static_cast<unsigned char>(c)];
    }
  }

  // A numeric conversion, by the C library on the rest of the input.
  int numeric_field(const ScanDirective& d) {
    std::string spec = d.suppress ? "%*" : "%";
    if (d.width != 0) spec += std::to_string(d.width > INT_MAX ? INT_MAX : d.width);
    spec += d.length_text;
    spec += d.conversion;
    spec += "%n";
    int read = -1;
    int rc;
    if (d.suppress) {
      rc = std::sscanf(in_ + pos_, spec.c_str(), &read);
    } else {
      void* ptr = va_arg(*args_, void*);
      if (ptr == nullptr) return kFailed;
      rc = std::sscanf(in_ + pos_, spec.c_str(), ptr, &read);
    }
    if (read < 0) return rc == EOF ? input_failure() : assigned_;
    pos_ += static_cast<size_t>(read);
    if (!d.suppress) ++assigned_;
    return kContinue;
  }

  const char* in_;
  va_list* args_;
  size_t pos_ = 0;
  int assigned_ = 0;
};

// securec's rule for an empty input: the first buffer conversion of the format gets "".
void clear_first_buffer(const char* format, va_list* args) {
  const char* f = format;
  while (*f != '\0') {
    if (*f != '%') {
      ++f;
      continue;
    }
    size_t consumed = 0;
    const ScanDirective d = parse_scan_directive(f, &consumed);
    f += consumed;
    if (d.unsupported || d.malformed) return;
    if (d.conversion == '%' || d.suppress) continue;
    if (!takes_buffer(d.conversion)) {
      (void)va_arg(*args, void*);
      continue;
    }
    char* buffer = va_arg(*args, char*);
    const size_t size = buffer_size_arg(args);
    if (buffer != nullptr && size > 0) buffer[0] = '\0';
    return;
  }
}

}  // namespace

extern "C" {

int vsscanf_s(const char* buffer, const char* format, va_list argList) {
  if (buffer == nullptr || format == nullptr) return kFailed;
  va_list args;
  va_copy(args, argList);
  int result;
  const size_t length = kvflash::securec::bounded_length(buffer, kStringMax + 1);
  if (length == 0 || length > kStringMax) {
    clear_first_buffer(format, &args);
    result = kFailed;
  } else {
    result = Scanner(buffer, &args).run(format);
  }
  va_end(args);
  return result;
}

int sscanf_s(const char* buffer, const char* format, ...) {
  va_list args;
  va_start(args, format);
  const int n = vsscanf_s(buffer, format, args);
  va_end(args);
  return n;
}

}  // extern "C"
