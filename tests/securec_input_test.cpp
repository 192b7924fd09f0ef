// strtok_s and gets_s (include/securec.h): the error cases, strtok_s against the C library's
// strtok_r on random strings, and gets_s on a stream put in place of stdin.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "securec.h"
#include "support/guarded_buffer.hpp"

namespace kvflash {
namespace {

using test::GuardedBuffer;

TEST(SecurecStrtok, SplitsLikeStrtokR) {
  char text[] = ",,a,bb;;c,";
  char* context = nullptr;
  std::vector<std::string> tokens;
  for (char* t = strtok_s(text, ",;", &context); t != nullptr;
       t = strtok_s(nullptr, ",;", &context))
    tokens.push_back(t);
  EXPECT_EQ(tokens, (std::vector<std::string>{"a", "bb", "c"}));
  EXPECT_EQ(strtok_s(nullptr, ",;", &context), nullptr);  // stays at the end
}

TEST(SecurecStrtok, ErrorCases) {
  char text[] = "a b";
  char* context = nullptr;
  EXPECT_EQ(strtok_s(text, nullptr, &context), nullptr);
  EXPECT_EQ(strtok_s(text, " ", nullptr), nullptr);
  EXPECT_EQ(strtok_s(nullptr, " ", &context), nullptr);  // no string and no context
  EXPECT_STREQ(text, "a b");  // untouched by the refused calls
  char empty[] = "";
  EXPECT_EQ(strtok_s(empty, " ", &context), nullptr);
  char delims[] = "   ";
  EXPECT_EQ(strtok_s(delims, " ", &context), nullptr);
}

TEST(SecurecStrtok, RandomStringsMatchStrtokR) {
  std::mt19937 rng(3);
  for (int iter = 0; iter < 2000; ++iter) {
    std::string s(rng() % 24, ' ');
    for (char& c : s) c = "ab,;: "[rng() % 6];
    const char* delim = iter % 2 ? ",;" : ", :";
    std::string a = s, b = s;
    char *ca = nullptr, *cb = nullptr;
    char* ta = strtok_s(a.data(), delim, &ca);
    char* tb = strtok_r(b.data(), delim, &cb);
    while (true) {
      ASSERT_EQ(ta == nullptr, tb == nullptr) << s;
      if (ta == nullptr) break;
      ASSERT_EQ(ta - a.data(), tb - b.data()) << s;
      ASSERT_STREQ(ta, tb) << s;
      ta = strtok_s(nullptr, delim, &ca);
      tb = strtok_r(nullptr, delim, &cb);
    }
    ASSERT_EQ(a, b) << s;
  }
}

// Runs f with stdin reading `input`.
template <typename F>
void with_stdin(const std::string& input, F f) {
  std::FILE* saved = stdin;
  std::FILE* in = fmemopen(const_cast<char*>(input.data()), input.size(), "r");
  ASSERT_NE(in, nullptr);
  stdin = in;
  f();
  stdin = saved;
  std::fclose(in);
}

TEST(SecurecGets, ReadsLinesWithoutTheirEnds) {
  with_stdin("first\r\nsecond\nthird-is-long\n\nlast", [] {
    GuardedBuffer d(8);
    EXPECT_EQ(gets_s(d.data(), d.size()), d.data());
    EXPECT_STREQ(d.data(), "first");
    EXPECT_EQ(gets_s(d.data(), d.size()), d.data());
    EXPECT_STREQ(d.data(), "second");
    // A longer line: destMax - 1 characters now, the rest on the next read.
    EXPECT_EQ(gets_s(d.data(), d.size()), d.data());
    EXPECT_STREQ(d.data(), "third-i");
    EXPECT_EQ(gets_s(d.data(), d.size()), d.data());
    EXPECT_STREQ(d.data(), "s-long");
    EXPECT_EQ(gets_s(d.data(), d.size()), d.data());
    EXPECT_STREQ(d.data(), "");  // the empty line
    EXPECT_EQ(gets_s(d.data(), d.size()), d.data());
    EXPECT_STREQ(d.data(), "last");  // no newline at the end of the input
    EXPECT_EQ(gets_s(d.data(), d.size()), nullptr);  // end of input
    EXPECT_EQ(d.data()[0], '\0');
    EXPECT_TRUE(d.guard_intact());
  });
}

TEST(SecurecGets, ErrorCases) {
  with_stdin("line\n", [] {
    GuardedBuffer d(8);
    d.set("keep");
    EXPECT_EQ(gets_s(nullptr, 8), nullptr);
    EXPECT_EQ(gets_s(d.data(), 0), nullptr);
    EXPECT_EQ(gets_s(d.data(), SECUREC_STRING_MAX_LEN + 1), nullptr);
    EXPECT_STREQ(d.data(), "keep");  // nothing read by the refused calls
    EXPECT_EQ(gets_s(d.data(), d.size()), d.data());
    EXPECT_STREQ(d.data(), "line");
  });
}

}  // namespace
}  // namespace kvflash
