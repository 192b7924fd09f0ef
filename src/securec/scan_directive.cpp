// parse_scan_directive (scan_directive.hpp): the grammar of a C99 scanf conversion specification.
#include "securec/scan_directive.hpp"

#include <cstdint>
#include <cstring>

namespace kvflash::securec {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Reads the length modifier at *f (if any) into d and advances *f past it.
void parse_length(const char** f, ScanDirective* d) {
  const char* p = *f;
  if (p[0] == 'h' && p[1] == 'h') {
    d->length = ScanLength::kHH;
    d->length_text = "hh";
  } else if (p[0] == 'l' && p[1] == 'l') {
    d->length = ScanLength::kLL;
    d->length_text = "ll";
  } else if (p[0] == 'h') {
    d->length = ScanLength::kH;
  } else if (p[0] == 'l') {
    d->length = ScanLength::kL;
  } else if (p[0] == 'j') {
    d->length = ScanLength::kJ;
  } else if (p[0] == 'z') {
    d->length = ScanLength::kZ;
  } else if (p[0] == 't') {
    d->length = ScanLength::kT;
  } else if (p[0] == 'L') {
    d->length = ScanLength::kLongDouble;
  } else {
    return;
  }
  if (d->length_text.empty()) d->length_text = std::string(1, p[0]);
  *f += d->length_text.size();
}

// Reads a scanset whose first character (after "[") is at *f; advances past the closing ']'.
// False when the set is not closed.
bool parse_scanset(const char** f, ScanDirective* d) {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(*f);
  bool negate = false;
  if (*p == '^') {
    negate = true;
    ++p;
  }
  bool set[256] = {};
  // A ']' first is a member, not the end.
  if (*p == ']') set[*p++] = true;
  while (*p != '\0' && *p != ']') {
    // "a-z" is a range when '-' stands between two characters in ascending order; otherwise '-'
    // is itself a member (first, last, or between a descending pair), as in the C library.
    if (p[1] == '-' && p[2] != '\0' && p[2] != ']' && p[0] <= p[2]) {
      for (unsigned c = p[0]; c <= p[2]; ++c) set[c] = true;
      p += 3;
    } else {
      set[*p++] = true;
    }
  }
  if (*p != ']') return false;
  for (int c = 0; c < 256; ++c) d->in_set[c] = negate ? !set[c] : set[c];
  d->in_set[0] = false;  // the end of the input is never part of a field
  *f = reinterpret_cast<const char*>(p + 1);
  return true;
}

}  // namespace

ScanDirective parse_scan_directive(const char* format, size_t* consumed) {
  ScanDirective d;
  const char* f = format + 1;  // past '%'
  if (*f == '%') {
    d.conversion = '%';
    *consumed = 2;
    return d;
  }
  if (*f == '*') {
    d.suppress = true;
    ++f;
  }
  bool width_given = false;
  while (is_digit(*f)) {
    width_given = true;
    const size_t digit = static_cast<size_t>(*f - '0');
    d.width = d.width > (SIZE_MAX - digit) / 10 ? SIZE_MAX : d.width * 10 + digit;
    ++f;
  }
  if (width_given && *f == '$') d.unsupported = true;  // positional arguments
  if (*f == 'm') d.unsupported = true;                 // the allocating modifier
  parse_length(&f, &d);
  const char conv = *f;
  if (conv == '\0') {
    d.malformed = true;
    *consumed = static_cast<size_t>(f - format);
    return d;
  }
  ++f;
  d.conversion = conv;
  if (conv == '[') {
    if (!parse_scanset(&f, &d)) {
      d.malformed = true;
      *consumed = std::strlen(format);
      return d;
    }
  } else if (conv == 'C' || conv == 'S') {
    d.unsupported = true;  // the C library's spellings of %lc and %ls
  } else if (std::strchr("diouxXaAeEfFgGcspn", conv) == nullptr) {
    d.malformed = true;
  }
  const bool wide = d.length == ScanLength::kL || d.length == ScanLength::kLL ||
                    d.length == ScanLength::kLongDouble;
  if (takes_buffer(conv) && wide) d.unsupported = true;
  *consumed = static_cast<size_t>(f - format);
  return d;
}

}  // namespace kvflash::securec
