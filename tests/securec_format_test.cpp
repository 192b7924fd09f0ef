// sprintf_s, vsprintf_s, snprintf_s, vsnprintf_s, snprintf_truncated_s, vsnprintf_truncated_s
// (include/securec.h): every documented error case with what it leaves in the destination,
// snprintf_s's count (truncation reported as -1), and the output of many formats against the C
// library's snprintf, with nothing written past destMax.
#include <gtest/gtest.h>

#include <clocale>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cwchar>
#include <string>

#include "securec.h"
#include "support/guarded_buffer.hpp"

namespace kvflash {
namespace {

using test::GuardedBuffer;

int call_vsprintf(char* d, size_t m, const char* f, ...) {
  va_list a;
  va_start(a, f);
  const int n = vsprintf_s(d, m, f, a);
  va_end(a);
  return n;
}
int call_vsnprintf(char* d, size_t m, size_t c, const char* f, ...) {
  va_list a;
  va_start(a, f);
  const int n = vsnprintf_s(d, m, c, f, a);
  va_end(a);
  return n;
}
int call_vsnprintf_truncated(char* d, size_t m, const char* f, ...) {
  va_list a;
  va_start(a, f);
  const int n = vsnprintf_truncated_s(d, m, f, a);
  va_end(a);
  return n;
}

TEST(SecurecSprintf, WritesWhatFits) {
  GuardedBuffer d(8);
  EXPECT_EQ(sprintf_s(d.data(), d.size(), "%d-%s", 42, "abcd"), 7);  // exactly destMax - 1
  EXPECT_STREQ(d.data(), "42-abcd");
  EXPECT_EQ(call_vsprintf(d.data(), d.size(), "%c%c", 'x', 'y'), 2);
  EXPECT_STREQ(d.data(), "xy");
  EXPECT_EQ(sprintf_s(d.data(), d.size(), ""), 0);
  EXPECT_STREQ(d.data(), "");
  EXPECT_TRUE(d.guard_intact());
}

TEST(SecurecSprintf, TooLongClearsTheDestination) {
  GuardedBuffer d(8);
  EXPECT_EQ(sprintf_s(d.data(), d.size(), "%s", "abcdefgh"), -1);
  EXPECT_EQ(d.data()[0], '\0');
  EXPECT_EQ(call_vsprintf(d.data(), d.size(), "%08d", 1), -1);
  EXPECT_EQ(d.data()[0], '\0');
  EXPECT_TRUE(d.guard_intact());
}

TEST(SecurecSprintf, ArgumentErrors) {
  GuardedBuffer d(8);
  d.set("abc");
  EXPECT_EQ(sprintf_s(d.data(), 0, "x"), -1);  // destMax 0: nothing written
  EXPECT_EQ(sprintf_s(d.data(), SECUREC_STRING_MAX_LEN + 1, "x"), -1);
  EXPECT_STREQ(d.data(), "abc");
  EXPECT_EQ(sprintf_s(nullptr, 8, "x"), -1);
  EXPECT_EQ(sprintf_s(d.data(), d.size(), nullptr), -1);  // null format: strDest[0] = '\0'
  EXPECT_EQ(d.data()[0], '\0');
  d.set("abc");
  EXPECT_EQ(call_vsprintf(d.data(), d.size(), nullptr), -1);
  EXPECT_EQ(d.data()[0], '\0');
  EXPECT_TRUE(d.guard_intact());
}

TEST(SecurecSprintf, EncodingErrorClearsTheDestination) {
  // In the C locale a wide character outside ASCII cannot be converted (EILSEQ).
  const char* old = std::setlocale(LC_ALL, nullptr);
  const std::string saved = old != nullptr ? old : "C";
  std::setlocale(LC_ALL, "C");
  const wchar_t wide[] = {static_cast<wchar_t>(0x4e2d), 0};
  GuardedBuffer d(16);
  d.set("abc");
  EXPECT_EQ(sprintf_s(d.data(), d.size(), "%ls", wide), -1);
  EXPECT_EQ(d.data()[0], '\0');
  d.set("abc");
  EXPECT_EQ(snprintf_s(d.data(), d.size(), 4, "%ls", wide), -1);
  EXPECT_EQ(d.data()[0], '\0');
  std::setlocale(LC_ALL, saved.c_str());
}

TEST(SecurecSnprintf, CountBelowDestMaxTruncatesAndReportsMinusOne) {
  GuardedBuffer d(16);
  EXPECT_EQ(snprintf_s(d.data(), d.size(), 5, "%s", "abcdefgh"), -1);
  EXPECT_STREQ(d.data(), "abcde");  // the first count characters are kept
  EXPECT_EQ(snprintf_s(d.data(), d.size(), 5, "%s", "abcde"), 5);
  EXPECT_STREQ(d.data(), "abcde");
  EXPECT_EQ(call_vsnprintf(d.data(), d.size(), 0, "%s", "x"), -1);
  EXPECT_STREQ(d.data(), "");
  EXPECT_EQ(call_vsnprintf(d.data(), d.size(), 0, ""), 0);
  EXPECT_TRUE(d.guard_intact());
}

TEST(SecurecSnprintf, CountAtOrAboveDestMaxMustFit) {
  GuardedBuffer d(8);
  EXPECT_EQ(snprintf_s(d.data(), d.size(), 8, "%s", "abcdefg"), 7);
  EXPECT_STREQ(d.data(), "abcdefg");
  EXPECT_EQ(snprintf_s(d.data(), d.size(), 100, "%s", "abcdefgh"), -1);
  EXPECT_EQ(d.data()[0], '\0');
  d.set("abc");
  EXPECT_EQ(snprintf_s(d.data(), d.size(), static_cast<size_t>(-1), "%s", "abcdefgh"), -1);
  EXPECT_EQ(d.data()[0], '\0');
  EXPECT_EQ(snprintf_s(d.data(), d.size(), static_cast<size_t>(-1), "%d", 12), 2);
  EXPECT_STREQ(d.data(), "12");
  EXPECT_TRUE(d.guard_intact());
}

TEST(SecurecSnprintf, ArgumentErrors) {
  GuardedBuffer d(8);
  d.set("abc");
  EXPECT_EQ(snprintf_s(d.data(), 0, 4, "x"), -1);
  EXPECT_EQ(snprintf_s(d.data(), SECUREC_STRING_MAX_LEN + 1, 4, "x"), -1);
  EXPECT_STREQ(d.data(), "abc");
  EXPECT_EQ(snprintf_s(nullptr, 8, 4, "x"), -1);
  EXPECT_EQ(snprintf_s(d.data(), d.size(), 4, nullptr), -1);
  EXPECT_EQ(d.data()[0], '\0');
  // count above SECUREC_STRING_MAX_LEN - 1 (other than (size_t)-1) is an error.
  d.set("abc");
  EXPECT_EQ(snprintf_s(d.data(), d.size(), SECUREC_STRING_MAX_LEN, "x"), -1);
  EXPECT_EQ(d.data()[0], '\0');
  d.set("abc");
  EXPECT_EQ(call_vsnprintf(d.data(), d.size(), SECUREC_STRING_MAX_LEN - 1, "x"), 1);
  EXPECT_TRUE(d.guard_intact());
}

TEST(SecurecSnprintfTruncated, TruncatesToDestMaxMinusOne) {
  GuardedBuffer d(6);
  EXPECT_EQ(snprintf_truncated_s(d.data(), d.size(), "%s", "abcdefgh"), 5);
  EXPECT_STREQ(d.data(), "abcde");
  EXPECT_EQ(call_vsnprintf_truncated(d.data(), d.size(), "%d", 7), 1);
  EXPECT_STREQ(d.data(), "7");
  EXPECT_EQ(snprintf_truncated_s(d.data(), 0, "x"), -1);
  EXPECT_EQ(snprintf_truncated_s(nullptr, 6, "x"), -1);
  EXPECT_EQ(snprintf_truncated_s(d.data(), d.size(), nullptr), -1);
  EXPECT_EQ(d.data()[0], '\0');
  EXPECT_TRUE(d.guard_intact());
}

// Formats with their arguments, formatted by sprintf_s and by the C library into a large buffer.
TEST(SecurecSprintf, MatchesTheCLibrary) {
  char want[256];
  char got[256];
  auto both = [&](auto&&... args) {
    const int n = sprintf_s(got, sizeof(got), args...);
    const int m = std::snprintf(want, sizeof(want), args...);
    EXPECT_EQ(n, m);
    EXPECT_STREQ(got, want);
  };
  both("%d %i %u %x %X %o", -17, 42, 3000000000u, 0xbeefu, 0xbeefu, 8u);
  both("%hhd %hd %ld %lld %jd %zu %td", static_cast<signed char>(-3), static_cast<short>(-300),
       -70000L, -8000000000LL, static_cast<intmax_t>(-5), sizeof(int), static_cast<ptrdiff_t>(-9));
  both("%f %e %g %a %.3f %10.2e %-8g|", 3.25, -0.000123, 1e20, 1.5, 3.14159265358979, 12345.678, 0.5);
  both("%Lf %Lg", 1.25L, 3.5e-300L);
  both("%s|%10s|%-10s|%.2s", "abc", "right", "left", "cut");
  both("%c%c%%%5c", 'a', 'b', 'z');
  both("%+d % d %05d %#x %#o", 5, 5, 5, 255u, 8u);
  both("%p %p", static_cast<void*>(got), static_cast<void*>(nullptr));
  both("%*d|%-*d|%.*f", 6, 1, 6, 2, 2, 3.14159);
  both("nan %f inf %f", std::nan(""), -HUGE_VAL);
}

}  // namespace
}  // namespace kvflash
