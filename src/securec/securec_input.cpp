// strtok_s and gets_s (include/securec.h; docs/api.md, "securec").
#include <cstdio>
#include <cstring>

#include "securec/securec_checks.hpp"

using kvflash::securec::string_size_ok;

extern "C" {

char* strtok_s(char* strToken, const char* strDelimit, char** context) {
  if (strDelimit == nullptr || context == nullptr) return nullptr;
  char* s = strToken != nullptr ? strToken : *context;
  if (s == nullptr) return nullptr;
  s += std::strspn(s, strDelimit);  // leading delimiters
  if (*s == '\0') {
    *context = s;
    return nullptr;
  }
  char* end = s + std::strcspn(s, strDelimit);
  if (*end != '\0') *end++ = '\0';
  *context = end;
  return s;
}

char* gets_s(char* buffer, size_t destMax) {
  if (buffer == nullptr || !string_size_ok(destMax)) return nullptr;
  // destMax <= SECUREC_STRING_MAX_LEN fits an int.
  if (std::fgets(buffer, static_cast<int>(destMax), stdin) == nullptr) {
    buffer[0] = '\0';
    return nullptr;
  }
  size_t n = std::strlen(buffer);
  while (n > 0 && (buffer[n - 1] == '\n' || buffer[n - 1] == '\r')) buffer[--n] = '\0';
  return buffer;
}

}  // extern "C"
