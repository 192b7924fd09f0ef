// fp16/bf16 conversions: core/half.hpp and CANN's aclFloat16ToFloat / aclFloatToFloat16
// (acl/acl_base.h) exhaustively against a double-precision round-to-nearest-even oracle, and each
// ISA's vector/scalar conversions (vec_ops.hpp) against core/half.hpp.
#include "core/half.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "acl/acl_base.h"
#include "cpu/isa.hpp"
#include "support/vec_ops.hpp"

namespace kvflash {
namespace {

struct Format {
  int man_bits;  // stored mantissa bits
  int exp_bits;
  int min_exp;  // exponent of the smallest normal
  double max_finite;
};
constexpr Format kFp16{10, 5, -14, 65504.0};
const Format kBf16{7, 8, -126, std::ldexp(2.0 - std::ldexp(1.0, -7), 127)};

// The value of a 16-bit pattern, decoded in double from the format's definition.
double decode(uint16_t h, const Format& f) {
  const int sign = h >> 15;
  const int exp = (h >> f.man_bits) & ((1 << f.exp_bits) - 1);
  const int man = h & ((1 << f.man_bits) - 1);
  const int bias = (1 << (f.exp_bits - 1)) - 1;
  double v;
  if (exp == (1 << f.exp_bits) - 1) {
    v = man ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else if (exp == 0) {
    v = std::ldexp(static_cast<double>(man), f.min_exp - f.man_bits);
  } else {
    v = std::ldexp(1.0 + std::ldexp(static_cast<double>(man), -f.man_bits), exp - bias);
  }
  return sign ? -v : v;
}

// x rounded to the format, round to nearest even, overflow to inf (the oracle).
double round_to(double x, const Format& f) {
  if (x == 0.0 || !std::isfinite(x)) return x;
  const double a = std::abs(x);
  int e = 0;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1): a's exponent is e - 1
  const int exp = std::max(e - 1, f.min_exp);
  const double quantum = std::ldexp(1.0, exp - f.man_bits);
  double r = std::nearbyint(a / quantum) * quantum;  // a / quantum is exact
  if (r > f.max_finite) r = std::numeric_limits<double>::infinity();
  return std::copysign(r, x);
}

bool same_value(double got, double want) {
  if (std::isnan(want)) return std::isnan(got);
  return got == want && std::signbit(got) == std::signbit(want);
}

// Floats that probe the rounding of narrowing to f: every value of the format, the midpoints
// between neighbours and one fp32 ulp either side of them, plus a strided sweep of all fp32s.
std::vector<float> narrowing_probes(const Format& f) {
  std::vector<float> out;
  for (uint32_t h = 0; h < 0x7fffu; ++h) {
    const double v = decode(static_cast<uint16_t>(h), f);
    const double next = decode(static_cast<uint16_t>(h + 1), f);
    if (!std::isfinite(v)) continue;
    const double mid_d = std::isfinite(next) ? (v + next) / 2 : v + (v - decode(h - 1, f)) / 2;
    const float mid = static_cast<float>(mid_d);  // exact: one more bit than the format
    for (float x : {static_cast<float>(v), mid, std::nextafter(mid, 0.0f),
                    std::nextafter(mid, std::numeric_limits<float>::infinity())}) {
      out.push_back(x);
      out.push_back(-x);
    }
  }
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += 4099) {
    out.push_back(std::bit_cast<float>(static_cast<uint32_t>(u)));
  }
  out.push_back(std::numeric_limits<float>::infinity());
  out.push_back(-std::numeric_limits<float>::infinity());
  out.push_back(std::numeric_limits<float>::quiet_NaN());
  out.push_back(std::bit_cast<float>(0xff800001u));  // negative signalling NaN
  return out;
}

TEST(Half, Fp16ToFloatAllPatterns) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const double want = decode(static_cast<uint16_t>(h), kFp16);
    ASSERT_TRUE(same_value(core::fp16_to_float(static_cast<uint16_t>(h)), want)) << std::hex << h;
  }
}

TEST(Half, Bf16ToFloatAllPatterns) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const double want = decode(static_cast<uint16_t>(h), kBf16);
    ASSERT_TRUE(same_value(core::bf16_to_float(static_cast<uint16_t>(h)), want)) << std::hex << h;
  }
}

void check_narrowing(const Format& f, uint16_t (*narrow)(float), float (*widen)(uint16_t)) {
  for (float x : narrowing_probes(f)) {
    const uint16_t h = narrow(x);
    const double got = widen(h);
    if (std::isnan(x)) {
      ASSERT_TRUE(std::isnan(got)) << x;
      ASSERT_NE(h & (1u << (f.man_bits - 1)), 0u) << "NaN must be quiet";
      ASSERT_EQ(h >> 15, std::signbit(x) ? 1u : 0u);
      continue;
    }
    const double want = round_to(x, f);
    ASSERT_TRUE(same_value(got, want))
        << "x = " << x << " (0x" << std::hex << std::bit_cast<uint32_t>(x) << "): got " << got
        << ", want " << want;
  }
}

TEST(Half, FloatToFp16RoundsToNearestEven) {
  check_narrowing(kFp16, core::float_to_fp16, core::fp16_to_float);
}

TEST(Half, FloatToBf16RoundsToNearestEven) {
  check_narrowing(kBf16, core::float_to_bf16, core::bf16_to_float);
}

TEST(Half, RoundTripOfEveryValue) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto x = static_cast<uint16_t>(h);
    if (!std::isnan(core::fp16_to_float(x))) {
      ASSERT_EQ(core::float_to_fp16(core::fp16_to_float(x)), x) << std::hex << h;
    }
    if (!std::isnan(core::bf16_to_float(x))) {
      ASSERT_EQ(core::float_to_bf16(core::bf16_to_float(x)), x) << std::hex << h;
    }
  }
}

// ---- CANN's C API: aclFloat16ToFloat / aclFloatToFloat16 --------------------------------------

TEST(Half, AclFloat16ToFloatAllPatterns) {
  static_assert(sizeof(aclFloat16) == 2 && static_cast<aclFloat16>(-1) > 0,
                "aclFloat16 is uint16_t, as in CANN");
  for (uint32_t h = 0; h < 65536; ++h) {
    const double want = decode(static_cast<uint16_t>(h), kFp16);
    ASSERT_TRUE(same_value(aclFloat16ToFloat(static_cast<aclFloat16>(h)), want)) << std::hex << h;
  }
}

TEST(Half, AclFloatToFloat16RoundsToNearestEven) {
  check_narrowing(kFp16, aclFloatToFloat16, aclFloat16ToFloat);
  // The edges by name: the largest finite value, half an ulp above it (a tie, to even: inf), the
  // smallest subnormal and half of it (a tie, to even: zero), and NaN of either sign.
  EXPECT_EQ(aclFloatToFloat16(65504.0f), 0x7bffu);
  EXPECT_EQ(aclFloatToFloat16(65519.99f), 0x7bffu);
  EXPECT_EQ(aclFloatToFloat16(65520.0f), 0x7c00u);
  EXPECT_EQ(aclFloatToFloat16(-1e30f), 0xfc00u);
  EXPECT_EQ(aclFloatToFloat16(0x1p-24f), 0x0001u);
  EXPECT_EQ(aclFloatToFloat16(0x1p-25f), 0x0000u);
  EXPECT_EQ(aclFloatToFloat16(0x1.8p-24f), 0x0002u);  // 1.5 ulp: ties to even
  EXPECT_EQ(aclFloatToFloat16(-0.0f), 0x8000u);
  EXPECT_EQ(aclFloatToFloat16(std::numeric_limits<float>::quiet_NaN()) & 0x7e00u, 0x7e00u);
  EXPECT_EQ(aclFloatToFloat16(-std::numeric_limits<float>::quiet_NaN()) & 0xfe00u, 0xfe00u);
}

TEST(Half, AclFloat16RoundTripOfEveryValue) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto x = static_cast<aclFloat16>(h);
    const float f = aclFloat16ToFloat(x);
    if (std::isnan(f)) {
      ASSERT_TRUE(std::isnan(aclFloat16ToFloat(aclFloatToFloat16(f)))) << std::hex << h;
    } else {
      ASSERT_EQ(aclFloatToFloat16(f), x) << std::hex << h;
    }
  }
}

// ---- the SIMD conversions of every available ISA against core/half.hpp
// ---------------------------

class SimdConversionTest : public ::testing::TestWithParam<cpu::Isa> {};

std::vector<cpu::Isa> available_isas() {
  std::vector<cpu::Isa> isas;
  for (int i = 0; i <= static_cast<int>(cpu::detected_isa()); ++i) {
    isas.push_back(static_cast<cpu::Isa>(i));
  }
  return isas;
}

bool same_float(float got, float want) {
  if (std::isnan(want)) return std::isnan(got);
  return std::bit_cast<uint32_t>(got) == std::bit_cast<uint32_t>(want);
}

TEST_P(SimdConversionTest, WideningMatchesScalarForAllPatterns) {
  // One element of offset: the vector loads must work on any alignment; the odd count leaves a
  // scalar tail.
  std::vector<uint16_t> buf(65536 + 1 + 5);
  for (uint32_t h = 0; h < 65536; ++h) buf[1 + h] = static_cast<uint16_t>(h);
  for (int i = 0; i < 5; ++i) buf[1 + 65536 + i] = static_cast<uint16_t>(0x3c00 + 977 * i);
  const size_t n = buf.size() - 1;
  std::vector<float> fp16(n), bf16(n);
  cpu::vec_fp16_to_float(GetParam(), buf.data() + 1, fp16.data(), n);
  cpu::vec_bf16_to_float(GetParam(), buf.data() + 1, bf16.data(), n);
  for (size_t i = 0; i < n; ++i) {
    ASSERT_TRUE(same_float(fp16[i], core::fp16_to_float(buf[1 + i]))) << std::hex << buf[1 + i];
    ASSERT_TRUE(same_float(bf16[i], core::bf16_to_float(buf[1 + i]))) << std::hex << buf[1 + i];
  }
}

TEST_P(SimdConversionTest, Int8WideningForAllValues) {
  std::vector<int8_t> x(256 + 3 + 1);
  for (size_t i = 0; i + 1 < x.size(); ++i) x[1 + i] = static_cast<int8_t>(i * 7);
  const size_t n = x.size() - 1;
  std::vector<float> y(n);
  cpu::vec_int8_to_float(GetParam(), x.data() + 1, y.data(), n);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(y[i], static_cast<float>(x[1 + i])) << i;
}

TEST_P(SimdConversionTest, NarrowingMatchesScalar) {
  for (const Format* f : {&kFp16, &kBf16}) {
    const std::vector<float> x = narrowing_probes(*f);
    std::vector<uint16_t> fp16(x.size()), bf16(x.size());
    cpu::vec_float_to_fp16(GetParam(), x.data(), fp16.data(), x.size());
    cpu::vec_float_to_bf16(GetParam(), x.data(), bf16.data(), x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_EQ(fp16[i], core::float_to_fp16(x[i])) << std::hex << std::bit_cast<uint32_t>(x[i]);
      ASSERT_EQ(bf16[i], core::float_to_bf16(x[i])) << std::hex << std::bit_cast<uint32_t>(x[i]);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllIsas, SimdConversionTest, ::testing::ValuesIn(available_isas()),
                         [](const ::testing::TestParamInfo<cpu::Isa>& info) {
                           return std::string(cpu::isa_name(info.param));
                         });

}  // namespace
}  // namespace kvflash
