// strcpy_s, strncpy_s, strcat_s, strncat_s (include/securec.h): every documented error case with
// what it leaves in the destination, the order of the checks, sources that are not terminated
// within what could fit (read no further: the heap arrays below are exactly that long, so ASan
// reports any over-read), overlaps, and random valid calls against the C library's strcpy /
// strcat / strncat, with nothing written past destMax.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <string>

#include "securec.h"
#include "support/guarded_buffer.hpp"

namespace kvflash {
namespace {

using test::GuardedBuffer;

// A heap array holding exactly the characters of s, with no terminator after them.
std::unique_ptr<char[]> unterminated(const std::string& s) {
  auto p = std::make_unique<char[]>(s.size());
  std::memcpy(p.get(), s.data(), s.size());
  return p;
}

// The checks every string function shares, run for each of the four.
struct StringFn {
  const char* name;
  errno_t (*call)(char*, size_t, const char*);
};
errno_t call_strcpy(char* d, size_t m, const char* s) { return strcpy_s(d, m, s); }
errno_t call_strncpy(char* d, size_t m, const char* s) { return strncpy_s(d, m, s, 4); }
errno_t call_strcat(char* d, size_t m, const char* s) { return strcat_s(d, m, s); }
errno_t call_strncat(char* d, size_t m, const char* s) { return strncat_s(d, m, s, 4); }
const StringFn kStringFns[] = {{"strcpy_s", call_strcpy},
                               {"strncpy_s", call_strncpy},
                               {"strcat_s", call_strcat},
                               {"strncat_s", call_strncat}};

TEST(SecurecString, SharedArgumentChecks) {
  for (const StringFn& fn : kStringFns) {
    SCOPED_TRACE(fn.name);
    GuardedBuffer d(8);
    d.set("abc");
    const std::string before = d.contents();
    // destMax 0 or above the limit: ERANGE, nothing written (also with null pointers).
    EXPECT_EQ(fn.call(d.data(), 0, "x"), ERANGE);
    EXPECT_EQ(fn.call(d.data(), SECUREC_STRING_MAX_LEN + 1, "x"), ERANGE);
    EXPECT_EQ(fn.call(nullptr, 0, nullptr), ERANGE);
    EXPECT_EQ(d.contents(), before);
    // Null destination: EINVAL; null source: EINVAL_AND_RESET with strDest[0] = '\0'.
    EXPECT_EQ(fn.call(nullptr, 8, "x"), EINVAL);
    EXPECT_EQ(fn.call(nullptr, 8, nullptr), EINVAL);
    EXPECT_EQ(fn.call(d.data(), d.size(), nullptr), EINVAL_AND_RESET);
    EXPECT_EQ(d.contents()[0], '\0');
    EXPECT_EQ(d.contents().substr(1), before.substr(1));  // only the first character
    EXPECT_TRUE(d.guard_intact());
  }
}

TEST(SecurecStrcpy, FitsUpToDestMaxMinusOne) {
  GuardedBuffer d(6);
  EXPECT_EQ(strcpy_s(d.data(), d.size(), "hello"), EOK);
  EXPECT_STREQ(d.data(), "hello");
  EXPECT_EQ(strcpy_s(d.data(), d.size(), ""), EOK);
  EXPECT_STREQ(d.data(), "");
  d.set("hello");
  EXPECT_EQ(strcpy_s(d.data(), d.size(), "toolong"), ERANGE_AND_RESET);
  EXPECT_EQ(d.contents(), std::string("\0ello\0", 6));
  EXPECT_EQ(strcpy_s(d.data(), d.size(), "sixsix"), ERANGE_AND_RESET);  // 6 + terminator
  EXPECT_TRUE(d.guard_intact());
}

TEST(SecurecStrcpy, UnterminatedSourceIsReadNoFurtherThanDestMax) {
  GuardedBuffer d(6);
  const auto src = unterminated("abcdef");  // 6 characters, no '\0'
  EXPECT_EQ(strcpy_s(d.data(), d.size(), src.get()), ERANGE_AND_RESET);
  EXPECT_EQ(d.data()[0], '\0');
  EXPECT_TRUE(d.guard_intact());
}

TEST(SecurecStrcpy, Overlap) {
  char buf[32] = "0123456789";
  // The destination runs into the source, and the source into the destination.
  EXPECT_EQ(strcpy_s(buf + 2, 20, buf), EOVERLAP_AND_RESET);
  EXPECT_EQ(buf[2], '\0');
  std::strcpy(buf, "0123456789");
  EXPECT_EQ(strcpy_s(buf, 20, buf + 3), EOVERLAP_AND_RESET);
  EXPECT_EQ(buf[0], '\0');
  // The same buffer is a no-op; adjacent strings do not overlap.
  std::strcpy(buf, "0123456789");
  EXPECT_EQ(strcpy_s(buf, 20, buf), EOK);
  EXPECT_STREQ(buf, "0123456789");
  std::strcpy(buf, "abc");
  std::strcpy(buf + 4, "xyz");
  EXPECT_EQ(strcpy_s(buf + 8, 8, buf + 4), EOK);
  EXPECT_STREQ(buf + 8, "xyz");
  // The source's terminator is the destination's first byte: it is read, so the two overlap.
  std::strcpy(buf, "abc");
  EXPECT_EQ(strcpy_s(buf + 3, 8, buf), EOVERLAP_AND_RESET);
  // A source too long to fit is a range error, whether or not it overlaps.
  std::strcpy(buf, "0123456789");
  EXPECT_EQ(strcpy_s(buf + 1, 4, buf), ERANGE_AND_RESET);
}

TEST(SecurecStrncpy, CopiesAtMostCount) {
  GuardedBuffer d(8);
  EXPECT_EQ(strncpy_s(d.data(), d.size(), "abcdefghij", 3), EOK);
  EXPECT_STREQ(d.data(), "abc");
  EXPECT_EQ(strncpy_s(d.data(), d.size(), "ab", 5), EOK);
  EXPECT_STREQ(d.data(), "ab");
  d.set("xyz");
  EXPECT_EQ(strncpy_s(d.data(), d.size(), "abc", 0), EOK);  // count 0 stores ""
  EXPECT_STREQ(d.data(), "");
  // count >= destMax: the source must fit.
  EXPECT_EQ(strncpy_s(d.data(), d.size(), "abcdefg", 8), EOK);
  EXPECT_STREQ(d.data(), "abcdefg");
  EXPECT_EQ(strncpy_s(d.data(), d.size(), "abcdefg", static_cast<size_t>(-1) >> 40), EOK);
  EXPECT_EQ(strncpy_s(d.data(), d.size(), "abcdefgh", 8), ERANGE_AND_RESET);
  EXPECT_EQ(d.data()[0], '\0');
  d.set("xyz");
  EXPECT_EQ(strncpy_s(d.data(), d.size(), "abc", SECUREC_STRING_MAX_LEN + 1), ERANGE_AND_RESET);
  EXPECT_EQ(d.data()[0], '\0');
  EXPECT_TRUE(d.guard_intact());
}

TEST(SecurecStrncpy, UnterminatedSourceIsReadNoFurtherThanCount) {
  GuardedBuffer d(16);
  const auto src = unterminated("abcde");
  EXPECT_EQ(strncpy_s(d.data(), d.size(), src.get(), 5), EOK);
  EXPECT_STREQ(d.data(), "abcde");
  GuardedBuffer small(5);
  EXPECT_EQ(strncpy_s(small.data(), small.size(), src.get(), 5), ERANGE_AND_RESET);
  EXPECT_TRUE(small.guard_intact());
}

TEST(SecurecStrncpy, Overlap) {
  char buf[32] = "0123456789";
  EXPECT_EQ(strncpy_s(buf + 2, 20, buf, 5), EOVERLAP_AND_RESET);
  EXPECT_EQ(buf[2], '\0');
  // count stops the read before the destination: no overlap.
  std::strcpy(buf, "0123456789");
  EXPECT_EQ(strncpy_s(buf + 3, 20, buf, 3), EOK);
  EXPECT_STREQ(buf, "012012");
  // The same buffer truncates in place.
  std::strcpy(buf, "0123456789");
  EXPECT_EQ(strncpy_s(buf, 20, buf, 4), EOK);
  EXPECT_STREQ(buf, "0123");
}

TEST(SecurecStrcat, AppendsOrReports) {
  GuardedBuffer d(8);
  d.set("abc");
  EXPECT_EQ(strcat_s(d.data(), d.size(), "defg"), EOK);
  EXPECT_STREQ(d.data(), "abcdefg");
  EXPECT_EQ(strcat_s(d.data(), d.size(), ""), EOK);
  EXPECT_STREQ(d.data(), "abcdefg");
  EXPECT_EQ(strcat_s(d.data(), d.size(), "h"), ERANGE_AND_RESET);
  EXPECT_STREQ(d.data(), "");
  // An unterminated destination: EINVAL_AND_RESET.
  std::memset(d.data(), 'q', d.size());
  EXPECT_EQ(strcat_s(d.data(), d.size(), "x"), EINVAL_AND_RESET);
  EXPECT_EQ(d.data()[0], '\0');
  EXPECT_TRUE(d.guard_intact());
}

TEST(SecurecStrcat, UnterminatedSourceIsReadNoFurtherThanTheRoomLeft) {
  GuardedBuffer d(8);
  d.set("abc");
  const auto src = unterminated("vwxyz");  // 5 characters: room for 4 and the terminator
  EXPECT_EQ(strcat_s(d.data(), d.size(), src.get()), ERANGE_AND_RESET);
  EXPECT_EQ(d.data()[0], '\0');
}

TEST(SecurecStrcat, Overlap) {
  char buf[32] = "abc";
  EXPECT_EQ(strcat_s(buf, 20, buf), EOVERLAP_AND_RESET);  // a string appended to itself
  EXPECT_EQ(buf[0], '\0');
  std::strcpy(buf, "abcdef");
  EXPECT_EQ(strcat_s(buf, 20, buf + 2), EOVERLAP_AND_RESET);  // the source ends where it starts
  // The source right after the destination's terminator is overwritten by the copy.
  std::memcpy(buf, "ab\0cd\0", 6);
  EXPECT_EQ(strcat_s(buf, 20, buf + 3), EOVERLAP_AND_RESET);
  // A source that does not reach the written range is fine.
  std::memcpy(buf, "ab\0\0\0\0\0\0\0\0cd", 13);
  EXPECT_EQ(strcat_s(buf, 10, buf + 10), EOK);
  EXPECT_STREQ(buf, "abcd");
}

TEST(SecurecStrncat, AppendsAtMostCount) {
  GuardedBuffer d(8);
  d.set("ab");
  EXPECT_EQ(strncat_s(d.data(), d.size(), "cdefghij", 3), EOK);
  EXPECT_STREQ(d.data(), "abcde");
  EXPECT_EQ(strncat_s(d.data(), d.size(), "xyz", 0), EOK);
  EXPECT_STREQ(d.data(), "abcde");
  EXPECT_EQ(strncat_s(d.data(), d.size(), "fg", 10), EOK);
  EXPECT_STREQ(d.data(), "abcdefg");
  EXPECT_EQ(strncat_s(d.data(), d.size(), "hi", 1), ERANGE_AND_RESET);
  EXPECT_EQ(d.data()[0], '\0');
  d.set("ab");
  EXPECT_EQ(strncat_s(d.data(), d.size(), "x", SECUREC_STRING_MAX_LEN + 1), ERANGE_AND_RESET);
  EXPECT_EQ(d.data()[0], '\0');
  std::memset(d.data(), 'q', d.size());
  EXPECT_EQ(strncat_s(d.data(), d.size(), "x", 1), EINVAL_AND_RESET);
  EXPECT_TRUE(d.guard_intact());
  // count stops the read of an unterminated source.
  d.set("ab");
  const auto src = unterminated("cdef");
  EXPECT_EQ(strncat_s(d.data(), d.size(), src.get(), 4), EOK);
  EXPECT_STREQ(d.data(), "abcdef");
}

TEST(SecurecStrncat, Overlap) {
  char buf[32] = "abcdef";
  EXPECT_EQ(strncat_s(buf, 20, buf, 2), EOVERLAP_AND_RESET);
  std::memcpy(buf, "ab\0cd\0", 6);
  EXPECT_EQ(strncat_s(buf, 20, buf + 3, 2), EOVERLAP_AND_RESET);
}

std::string random_string(std::mt19937* rng, size_t max_len) {
  std::string s(static_cast<size_t>((*rng)() % (max_len + 1)), ' ');
  for (char& c : s) c = static_cast<char>('!' + (*rng)() % 90);
  return s;
}

TEST(SecurecString, RandomValidCallsMatchTheCLibrary) {
  std::mt19937 rng(11);
  for (int iter = 0; iter < 4000; ++iter) {
    const size_t dest_max = 1 + rng() % 40;
    const std::string prefix = random_string(&rng, dest_max - 1);
    const std::string src = random_string(&rng, dest_max + 8);
    const size_t count = rng() % (dest_max + 8);
    GuardedBuffer d(dest_max);
    d.set(prefix);
    char want[128] = {};
    errno_t rc = EOK;
    bool fits = false;
    switch (iter % 4) {
      case 0:
        fits = src.size() < dest_max;
        rc = strcpy_s(d.data(), dest_max, src.c_str());
        std::strcpy(want, src.c_str());
        break;
      case 1:  // strncpy_s is strncat onto an empty string
        fits = std::min(src.size(), count) < dest_max;
        rc = strncpy_s(d.data(), dest_max, src.c_str(), count);
        std::strncat(want, src.c_str(), count);
        break;
      case 2:
        fits = prefix.size() + src.size() < dest_max;
        rc = strcat_s(d.data(), dest_max, src.c_str());
        std::strcat(std::strcpy(want, prefix.c_str()), src.c_str());
        break;
      default:
        fits = prefix.size() + std::min(src.size(), count) < dest_max;
        rc = strncat_s(d.data(), dest_max, src.c_str(), count);
        std::strncat(std::strcpy(want, prefix.c_str()), src.c_str(), count);
    }
    ASSERT_TRUE(d.guard_intact()) << iter;
    if (fits) {
      ASSERT_EQ(rc, EOK) << iter;
      ASSERT_STREQ(d.data(), want) << iter;
    } else {
      ASSERT_EQ(rc, ERANGE_AND_RESET) << iter;
      ASSERT_EQ(d.data()[0], '\0') << iter;
    }
  }
}

}  // namespace
}  // namespace kvflash
