// memcpy_s, memmove_s, memset_s (include/securec.h): every documented error case with what it
// leaves in the destination, the order of the checks, and random valid calls against the C
// library's memcpy / memmove / memset, with nothing written past destMax.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "securec.h"
#include "support/guarded_buffer.hpp"

namespace kvflash {
namespace {

using test::GuardedBuffer;

const std::string kSource = "0123456789abcdefghijklmnopqrstuvwxyz";

std::string zeros(size_t n) { return std::string(n, '\0'); }

TEST(SecurecMemcpy, CopiesAndLeavesTheRest) {
  GuardedBuffer d(16);
  d.set("");
  EXPECT_EQ(memcpy_s(d.data(), d.size(), kSource.data(), 10), EOK);
  EXPECT_EQ(d.contents().substr(0, 10), kSource.substr(0, 10));
  EXPECT_EQ(d.contents()[10], GuardedBuffer::kFill);
  EXPECT_TRUE(d.guard_intact());
  EXPECT_EQ(memcpy_s(d.data(), d.size(), kSource.data(), 16), EOK);  // count == destMax
  EXPECT_EQ(d.contents(), kSource.substr(0, 16));
  EXPECT_TRUE(d.guard_intact());
}

TEST(SecurecMemcpy, DestMaxOutOfRangeIsERangeAndTouchesNothing) {
  GuardedBuffer d(8);
  d.set("abc");
  const std::string before = d.contents();
  EXPECT_EQ(memcpy_s(d.data(), 0, kSource.data(), 0), ERANGE);
  EXPECT_EQ(memcpy_s(d.data(), SECUREC_MEM_MAX_LEN + 1, kSource.data(), 4), ERANGE);
  EXPECT_EQ(memcpy_s(nullptr, 0, kSource.data(), 4), ERANGE);  // the size is checked first
  EXPECT_EQ(d.contents(), before);
  EXPECT_TRUE(d.guard_intact());
}

TEST(SecurecMemcpy, NullDestIsEInval) {
  EXPECT_EQ(memcpy_s(nullptr, 8, kSource.data(), 4), EINVAL);
  EXPECT_EQ(memcpy_s(nullptr, 8, nullptr, 4), EINVAL);
  EXPECT_EQ(memcpy_s(nullptr, 8, kSource.data(), 100), EINVAL);  // before the range check
}

TEST(SecurecMemcpy, NullSrcZeroesTheDestination) {
  GuardedBuffer d(8);
  d.set("abcdefg");
  EXPECT_EQ(memcpy_s(d.data(), d.size(), nullptr, 4), EINVAL_AND_RESET);
  EXPECT_EQ(d.contents(), zeros(8));
  EXPECT_TRUE(d.guard_intact());
  d.set("abc");
  EXPECT_EQ(memcpy_s(d.data(), d.size(), nullptr, 100), EINVAL_AND_RESET);  // before the range
  EXPECT_EQ(d.contents(), zeros(8));
}

TEST(SecurecMemcpy, CountAboveDestMaxZeroesTheDestination) {
  GuardedBuffer d(8);
  d.set("abcdefg");
  EXPECT_EQ(memcpy_s(d.data(), d.size(), kSource.data(), 9), ERANGE_AND_RESET);
  EXPECT_EQ(d.contents(), zeros(8));
  EXPECT_TRUE(d.guard_intact());
}

TEST(SecurecMemcpy, OverlapZeroesTheDestination) {
  // Both directions, and overlaps of a single byte.
  for (int shift : {1, -1, 7, -7}) {
    char buf[32];
    std::memcpy(buf, kSource.data(), sizeof(buf));
    char* dest = buf + 12;
    const char* src = dest + shift;
    EXPECT_EQ(memcpy_s(dest, 10, src, 8), EOVERLAP_AND_RESET) << shift;
    EXPECT_EQ(std::string(dest, 10), zeros(10)) << shift;
    EXPECT_EQ(std::string(buf, 12), kSource.substr(0, 12)) << "before dest, shift " << shift;
    EXPECT_EQ(std::string(buf + 22, 10), kSource.substr(22, 10)) << "after destMax";
  }
  // Adjacent ranges do not overlap.
  char buf[16];
  std::memcpy(buf, kSource.data(), sizeof(buf));
  EXPECT_EQ(memcpy_s(buf, 8, buf + 8, 8), EOK);
  EXPECT_EQ(std::string(buf, 8), kSource.substr(8, 8));
}

TEST(SecurecMemcpy, SameBufferAndZeroCountAreNoOps) {
  GuardedBuffer d(8);
  d.set("abcdefg");
  const std::string before = d.contents();
  EXPECT_EQ(memcpy_s(d.data(), d.size(), d.data(), 8), EOK);
  EXPECT_EQ(memcpy_s(d.data(), d.size(), kSource.data(), 0), EOK);
  EXPECT_EQ(d.contents(), before);
}

TEST(SecurecMemmove, OverlappingCopiesMatchMemmove) {
  for (int shift = -9; shift <= 9; ++shift) {
    char got[40], want[40];
    std::memcpy(got, kSource.data(), sizeof(got) - 4);
    std::memcpy(want, got, sizeof(got));
    char* dest = got + 15;
    EXPECT_EQ(memmove_s(dest, 12, dest + shift, 10), EOK) << shift;
    std::memmove(want + 15, want + 15 + shift, 10);
    EXPECT_EQ(std::string(got, 36), std::string(want, 36)) << shift;
  }
}

TEST(SecurecMemmove, ErrorCases) {
  GuardedBuffer d(8);
  d.set("abcdefg");
  EXPECT_EQ(memmove_s(d.data(), 0, kSource.data(), 1), ERANGE);
  EXPECT_EQ(memmove_s(d.data(), SECUREC_MEM_MAX_LEN + 1, kSource.data(), 1), ERANGE);
  EXPECT_EQ(d.contents().substr(0, 7), "abcdefg");
  EXPECT_EQ(memmove_s(nullptr, 8, kSource.data(), 1), EINVAL);
  EXPECT_EQ(memmove_s(d.data(), d.size(), nullptr, 1), EINVAL_AND_RESET);
  EXPECT_EQ(d.contents(), zeros(8));
  d.set("abcdefg");
  EXPECT_EQ(memmove_s(d.data(), d.size(), kSource.data(), 9), ERANGE_AND_RESET);
  EXPECT_EQ(d.contents(), zeros(8));
  EXPECT_EQ(memmove_s(d.data(), d.size(), kSource.data(), 0), EOK);
  EXPECT_TRUE(d.guard_intact());
}

TEST(SecurecMemset, FillsAndReportsErrors) {
  GuardedBuffer d(8);
  d.set("abcdefg");
  EXPECT_EQ(memset_s(d.data(), d.size(), 'x', 3), EOK);
  EXPECT_EQ(d.contents().substr(0, 8), std::string("xxxdefg") + '\0');
  EXPECT_EQ(memset_s(d.data(), d.size(), 0x1ff, 8), EOK);  // converted to unsigned char
  EXPECT_EQ(d.contents(), std::string(8, '\xff'));
  EXPECT_EQ(memset_s(d.data(), 0, 'y', 0), ERANGE);
  EXPECT_EQ(memset_s(d.data(), SECUREC_MEM_MAX_LEN + 1, 'y', 1), ERANGE);
  EXPECT_EQ(memset_s(nullptr, 8, 'y', 1), EINVAL);
  EXPECT_EQ(d.contents(), std::string(8, '\xff'));
  // count > destMax: the whole destination gets the value (securec's "reset" for memset_s).
  EXPECT_EQ(memset_s(d.data(), d.size(), 'z', 9), ERANGE_AND_RESET);
  EXPECT_EQ(d.contents(), std::string(8, 'z'));
  EXPECT_TRUE(d.guard_intact());
}

TEST(SecurecMemory, RandomValidCallsMatchTheCLibrary) {
  std::mt19937 rng(7);
  for (int iter = 0; iter < 2000; ++iter) {
    const size_t dest_max = 1 + rng() % 64;
    const size_t count = rng() % (dest_max + 1);
    std::vector<char> src(count + 1);
    for (char& c : src) c = static_cast<char>(rng());
    GuardedBuffer d(dest_max);
    std::vector<char> want(dest_max, GuardedBuffer::kFill);
    switch (iter % 3) {
      case 0:
        ASSERT_EQ(memcpy_s(d.data(), dest_max, src.data(), count), EOK);
        std::memcpy(want.data(), src.data(), count);
        break;
      case 1:
        ASSERT_EQ(memmove_s(d.data(), dest_max, src.data(), count), EOK);
        std::memmove(want.data(), src.data(), count);
        break;
      default:
        ASSERT_EQ(memset_s(d.data(), dest_max, src[0], count), EOK);
        std::memset(want.data(), src[0], count);
    }
    ASSERT_EQ(d.contents(), std::string(want.begin(), want.end())) << iter;
    ASSERT_TRUE(d.guard_intact()) << iter;
  }
}

}  // namespace
}  // namespace kvflash
