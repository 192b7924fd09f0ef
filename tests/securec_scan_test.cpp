// sscanf_s and vsscanf_s (include/securec.h): the buffer sizes of %c, %s and %[ (a field that
// does not fit stores "" and ends the scan, nothing is written past the size), every documented
// error case, and the results of many formats and inputs against the C library's sscanf.
#include <gtest/gtest.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "securec.h"
#include "support/guarded_buffer.hpp"

namespace kvflash {
namespace {

using test::GuardedBuffer;

int call_vsscanf(const char* buffer, const char* format, ...) {
  va_list a;
  va_start(a, format);
  const int n = vsscanf_s(buffer, format, a);
  va_end(a);
  return n;
}

TEST(SecurecSscanf, StringsWithTheirSizes) {
  char word[8], rest[16];
  int n = 0;
  EXPECT_EQ(sscanf_s("  hello world", "%s %s%n", word, sizeof(word), rest, sizeof(rest), &n), 2);
  EXPECT_STREQ(word, "hello");
  EXPECT_STREQ(rest, "world");
  EXPECT_EQ(n, 13);
  // A size passed as int, as CANN programs often do.
  EXPECT_EQ(sscanf_s("abc", "%s", word, static_cast<int>(sizeof(word))), 1);
  EXPECT_STREQ(word, "abc");
  EXPECT_EQ(call_vsscanf("key=value", "%[^=]=%s", word, 8u, rest, 16u), 2);
  EXPECT_STREQ(word, "key");
  EXPECT_STREQ(rest, "value");
}

TEST(SecurecSscanf, FieldThatFitsExactly) {
  GuardedBuffer d(6);
  EXPECT_EQ(sscanf_s("abcde", "%s", d.data(), d.size()), 1);  // 5 characters and '\0'
  EXPECT_STREQ(d.data(), "abcde");
  EXPECT_TRUE(d.guard_intact());
  GuardedBuffer c(3);
  EXPECT_EQ(sscanf_s("xyz", "%3c", c.data(), c.size()), 1);  // %c stores no terminator
  EXPECT_EQ(c.contents(), "xyz");
  EXPECT_TRUE(c.guard_intact());
}

TEST(SecurecSscanf, FieldTooLongStoresEmptyAndStops) {
  GuardedBuffer d(4);
  int after = -1;
  EXPECT_EQ(sscanf_s("abcdef 5", "%s %d", d.data(), d.size(), &after), 0);
  EXPECT_EQ(d.data()[0], '\0');
  EXPECT_EQ(after, -1);  // the scan ended at the field
  EXPECT_TRUE(d.guard_intact());
  // After an assigned field the count so far is returned.
  int first = 0;
  d.set("zz");
  EXPECT_EQ(sscanf_s("7 abcdef", "%d %s", &first, d.data(), d.size()), 1);
  EXPECT_EQ(first, 7);
  EXPECT_EQ(d.data()[0], '\0');
  // %[ and %c likewise.
  EXPECT_EQ(sscanf_s("aaaa", "%[a]", d.data(), d.size()), 0);
  EXPECT_EQ(d.data()[0], '\0');
  GuardedBuffer c(2);
  EXPECT_EQ(sscanf_s("xyz", "%3c", c.data(), c.size()), 0);
  EXPECT_EQ(c.data()[0], '\0');
  EXPECT_TRUE(c.guard_intact());
  EXPECT_TRUE(d.guard_intact());
  // The width limits the field, so a long input fits a small buffer.
  EXPECT_EQ(sscanf_s("abcdef", "%3s", d.data(), d.size()), 1);
  EXPECT_STREQ(d.data(), "abc");
}

TEST(SecurecSscanf, SuppressedFieldsTakeNoArguments) {
  int x = 0;
  EXPECT_EQ(sscanf_s("skipped 12 ab", "%*s %d %*[a-z]", &x), 1);
  EXPECT_EQ(x, 12);
  char c = 0;
  EXPECT_EQ(sscanf_s("abc", "%*2c%c", &c, 1), 1);
  EXPECT_EQ(c, 'c');
}

TEST(SecurecSscanf, ArgumentErrors) {
  char word[8] = "keep";
  int x = 0;
  EXPECT_EQ(sscanf_s(nullptr, "%d", &x), -1);
  EXPECT_EQ(sscanf_s("1", nullptr), -1);
  // An empty input: -1, and the first buffer conversion gets "".
  EXPECT_EQ(sscanf_s("", "%d %s", &x, word, sizeof(word)), -1);
  EXPECT_STREQ(word, "");
  std::strcpy(word, "keep");
  EXPECT_EQ(sscanf_s("", "%d", &x), -1);
  // A null destination or a size of 0.
  EXPECT_EQ(sscanf_s("5", "%d", static_cast<int*>(nullptr)), -1);
  EXPECT_EQ(sscanf_s("abc", "%s", static_cast<char*>(nullptr), sizeof(word)), -1);
  EXPECT_EQ(sscanf_s("abc", "%s", word, 0), -1);
  EXPECT_STREQ(word, "keep");
  EXPECT_EQ(sscanf_s("1 2", "%d %n", &x, static_cast<int*>(nullptr)), -1);
  // Refused forms: wide conversions, positional arguments, the allocating modifier.
  wchar_t wide[4];
  EXPECT_EQ(sscanf_s("abc", "%ls", wide, 4), -1);
  EXPECT_EQ(sscanf_s("abc", "%lc", wide, 4), -1);
  EXPECT_EQ(sscanf_s("abc", "%S", wide, 4), -1);
  EXPECT_EQ(sscanf_s("5", "%1$d", &x), -1);
  char* allocated = nullptr;
  EXPECT_EQ(sscanf_s("abc", "%ms", &allocated), -1);
  EXPECT_EQ(allocated, nullptr);
}

TEST(SecurecSscanf, InputAndMatchingFailures) {
  int a = 0, b = 0;
  EXPECT_EQ(sscanf_s("   ", "%d", &a), -1);        // input ends before the first conversion
  EXPECT_EQ(sscanf_s("x", "%d", &a), 0);           // matching failure
  EXPECT_EQ(sscanf_s("1", "%d %d", &a, &b), 1);    // input ends after one
  EXPECT_EQ(sscanf_s("1,2", "%d;%d", &a, &b), 1);  // a literal that does not match
  EXPECT_EQ(sscanf_s("5", "%*d%d", &a), -1);       // nothing assigned when the input ended
  char set[4];
  EXPECT_EQ(sscanf_s("xyz", "%[abc]", set, sizeof(set)), 0);  // an empty scanset match
  EXPECT_EQ(sscanf_s("abc", "%[abc", set, sizeof(set)), 0);   // an unclosed scanset
  EXPECT_EQ(sscanf_s("5", "%y", &a), 0);                      // an unknown conversion
}

// The same call to sscanf_s (sizes after each buffer) and to the C library's sscanf; the count
// and every assigned value must agree.
TEST(SecurecSscanf, MatchesTheCLibrary) {
  const char* numbers[] = {"0", "-17", "+42", "0x1f", "017", "4294967295", "9223372036854775807",
                           "  12abc", "3.5", "-0.0", "1e10", "0x1.8p3", "inf", "nan", "  -",
                           "18446744073709551616", "0x", "1e", "00012"};
  for (const char* in : numbers) {
    SCOPED_TRACE(in);
    {
      int x = -99, y = -99, n = -1, m = -1;
      const int r1 = sscanf_s(in, "%d%n", &x, &n);
      const int r2 = std::sscanf(in, "%d%n", &y, &m);
      EXPECT_EQ(r1, r2);
      EXPECT_EQ(x, y);
      EXPECT_EQ(n, m);
    }
    {
      long long x = -99, y = -99;
      unsigned u1 = 7, u2 = 7;
      EXPECT_EQ(sscanf_s(in, "%lli", &x), std::sscanf(in, "%lli", &y));
      EXPECT_EQ(x, y);
      EXPECT_EQ(sscanf_s(in, "%x", &u1), std::sscanf(in, "%x", &u2));
      EXPECT_EQ(u1, u2);
      EXPECT_EQ(sscanf_s(in, "%3o", &u1), std::sscanf(in, "%3o", &u2));
      EXPECT_EQ(u1, u2);
    }
    {
      double x = -99, y = -99;
      float f1 = -99, f2 = -99;
      long double l1 = -99, l2 = -99;
      EXPECT_EQ(sscanf_s(in, "%lf", &x), std::sscanf(in, "%lf", &y));
      EXPECT_TRUE(std::memcmp(&x, &y, sizeof(x)) == 0) << x << " vs " << y;
      EXPECT_EQ(sscanf_s(in, "%4g", &f1), std::sscanf(in, "%4g", &f2));
      EXPECT_TRUE(std::memcmp(&f1, &f2, sizeof(f1)) == 0) << f1 << " vs " << f2;
      EXPECT_EQ(sscanf_s(in, "%Le", &l1), std::sscanf(in, "%Le", &l2));
      EXPECT_TRUE(l1 == l2 || (l1 != l1 && l2 != l2));
    }
  }
  // Mixed formats: literals, white space, %%, %n, length modifiers, scansets and %c.
  {
    signed char hh1 = 0, hh2 = 0;
    short h1 = 0, h2 = 0;
    size_t z1 = 0, z2 = 0;
    void *p1 = nullptr, *p2 = nullptr;
    int n1 = 0, n2 = 0;
    const char* in = "a=-5, b=300 ; size 77 ptr 0x1234 100%";
    const char* fmt = "a=%hhd, b=%hd ; size %zu ptr %p %*d%%%n";
    EXPECT_EQ(sscanf_s(in, fmt, &hh1, &h1, &z1, &p1, &n1),
              std::sscanf(in, fmt, &hh2, &h2, &z2, &p2, &n2));
    EXPECT_EQ(hh1, hh2);
    EXPECT_EQ(h1, h2);
    EXPECT_EQ(z1, z2);
    EXPECT_EQ(p1, p2);
    EXPECT_EQ(n1, n2);
  }
  {
    char w1[32], w2[32], s1[32], s2[32], c1[4] = {}, c2[4] = {};
    int n1 = 0, n2 = 0;
    const char* in = "hello-World_42]x  tail\tend";
    const char* fmt = "%[a-z-]%[^]x]%3c %s%n";
    const int r1 = sscanf_s(in, fmt, w1, sizeof(w1), s1, sizeof(s1), c1, 3, w1 + 16, 16, &n1);
    const int r2 = std::sscanf(in, fmt, w2, s2, c2, w2 + 16, &n2);
    EXPECT_EQ(r1, r2);
    EXPECT_STREQ(w1, w2);
    EXPECT_STREQ(s1, s2);
    EXPECT_EQ(std::string(c1, 3), std::string(c2, 3));
    EXPECT_STREQ(w1 + 16, w2 + 16);
    EXPECT_EQ(n1, n2);
  }
  {
    char a1[8], a2[8];
    EXPECT_EQ(sscanf_s("]]]x", "%[]]", a1, sizeof(a1)), std::sscanf("]]]x", "%[]]", a2));
    EXPECT_STREQ(a1, a2);
    EXPECT_EQ(sscanf_s("a-b-c+", "%[-a-c]", a1, sizeof(a1)), std::sscanf("a-b-c+", "%[-a-c]", a2));
    EXPECT_STREQ(a1, a2);
  }
}

}  // namespace
}  // namespace kvflash
