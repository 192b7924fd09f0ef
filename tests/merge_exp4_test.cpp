// The merge's four-lane exp (src/cpu/merge/merge_exp4.h) against the scalar level's exp_scalar,
// bit for bit: the merge computes its part weights with the former and promises the latter's bits.
#include "cpu/merge/merge_exp4.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <vector>

#include "cpu/simd_scalar.h"

namespace kvflash::cpu {
namespace scalar {
// clang-format off
#include "cpu/simd_math-inl.h"
// clang-format on
}  // namespace scalar
namespace {

// Every 2503rd bit pattern (both signs, all exponents, NaN payloads), plus the edges of the clamp
// and of the subnormal and overflow ranges, four lanes at a time in every lane position.
TEST(MergeExp4, EveryLaneGivesTheScalarBits) {
  std::vector<uint32_t> bits;
  for (uint64_t u = 0; u <= 0xffffffffull; u += 2503) bits.push_back(static_cast<uint32_t>(u));
  for (float x : {-104.0f, -103.99999f, -104.00001f, 89.0f, 88.72284f, 88.72283f, -87.33655f,
                  -103.27893f, 0.0f, -0.0f, 1.0f, -1.0f}) {
    bits.push_back(std::bit_cast<uint32_t>(x));
  }
  for (uint32_t u : {0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7fa12345u,
                     0x00000001u, 0x80000001u, 0x007fffffu}) {
    bits.push_back(u);
  }
  while (bits.size() % sse2::kLanes != 0) bits.push_back(0);
  int64_t mismatches = 0;
  for (size_t i = 0; i < bits.size(); i += sse2::kLanes) {
    for (int rot = 0; rot < sse2::kLanes; ++rot) {
      alignas(16) float x[sse2::kLanes], e[sse2::kLanes];
      for (int j = 0; j < sse2::kLanes; ++j) {
        x[j] = std::bit_cast<float>(bits[i + (j + rot) % sse2::kLanes]);
      }
      sse2::vstore(e, sse2::vexp(sse2::vload(x)));
      for (int j = 0; j < sse2::kLanes; ++j) {
        const uint32_t want = std::bit_cast<uint32_t>(scalar::exp_scalar(x[j]));
        const uint32_t got = std::bit_cast<uint32_t>(e[j]);
        if (got != want && ++mismatches <= 5) {
          ADD_FAILURE() << std::hex << "x bits " << std::bit_cast<uint32_t>(x[j]) << ": lane "
                        << got << ", scalar " << want;
        }
      }
    }
  }
  EXPECT_EQ(mismatches, 0) << "of " << bits.size() * sse2::kLanes << " lanes";
}

}  // namespace
}  // namespace kvflash::cpu
