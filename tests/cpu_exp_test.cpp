// The kernels' vectorised exp against the exact value (double exp) on every ISA this CPU runs:
// a dense sweep of fp32 inputs over the whole useful range, and the special values the softmax
// relies on (-inf, huge negative, 0, overflow, NaN).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "cpu/isa.hpp"
#include "support/vec_ops.hpp"

namespace kvflash::cpu {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
// Error bound for normal results, in units in the last place of the exact result.
constexpr double kMaxUlp = 2.0;

std::vector<Isa> available_isas() {
  std::vector<Isa> isas;
  for (int i = 0; i <= static_cast<int>(detected_isa()); ++i) isas.push_back(static_cast<Isa>(i));
  return isas;
}

// One ulp of the fp32 value nearest to the positive exact value e (subnormal spacing below 2^-126).
double ulp_of(double e) {
  if (e < std::numeric_limits<float>::min()) return std::ldexp(1.0, -149);
  int exp = 0;
  std::frexp(e, &exp);  // e = f * 2^exp, f in [0.5, 1)
  return std::ldexp(1.0, exp - 24);
}

class ExpTest : public ::testing::TestWithParam<Isa> {};

TEST_P(ExpTest, DenseSweepWithinTwoUlp) {
  // Every 61st fp32 bit pattern between -104 and +88.72 (the range with a non-zero finite
  // result), about 35 million inputs, in vectors plus a scalar tail.
  const uint32_t lo_neg = std::bit_cast<uint32_t>(-104.0f);
  const uint32_t hi_pos = std::bit_cast<uint32_t>(88.72f);
  std::vector<float> x;
  for (uint32_t u = 0; u <= hi_pos; u += 61) x.push_back(std::bit_cast<float>(u));
  for (uint32_t u = 0x80000000u; u <= lo_neg; u += 61) x.push_back(std::bit_cast<float>(u));
  x.push_back(88.72f);
  x.push_back(-104.0f);
  std::vector<float> y(x.size());
  vec_exp(GetParam(), x.data(), y.data(), x.size());
  double worst = 0.0;
  float worst_x = 0.0f;
  for (size_t i = 0; i < x.size(); ++i) {
    const double exact = std::exp(static_cast<double>(x[i]));
    const double err = std::abs(static_cast<double>(y[i]) - exact) / ulp_of(exact);
    if (err > worst) worst = err, worst_x = x[i];
  }
  EXPECT_LE(worst, kMaxUlp) << "worst at x = " << worst_x << " on " << isa_name(GetParam());
}

TEST_P(ExpTest, SpecialValues) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> x = {-kInf, -1.0e12f, -3.0e38f,    -105.0f,     -104.5f,     0.0f,
                                -0.0f, kInf,     89.0f,       1.0e12f,     3.0e38f,     nan,
                                1.0f,  -1.0f,    88.7228317f, 88.7228394f, -87.3365479f};
  std::vector<float> y(x.size());
  vec_exp(GetParam(), x.data(), y.data(), x.size());
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[1], 0.0f);
  EXPECT_EQ(y[2], 0.0f);
  EXPECT_EQ(y[3], 0.0f);
  EXPECT_EQ(y[4], 0.0f);
  EXPECT_EQ(y[5], 1.0f);  // exactly 1: the merge relies on exp(0) == 1
  EXPECT_EQ(y[6], 1.0f);
  EXPECT_EQ(y[7], kInf);
  EXPECT_EQ(y[8], kInf);
  EXPECT_EQ(y[9], kInf);
  EXPECT_EQ(y[10], kInf);
  EXPECT_TRUE(std::isnan(y[11]));
  EXPECT_NEAR(y[12], 2.718281828, 2.718281828 * 3e-7);
  EXPECT_NEAR(y[13], 0.3678794412, 0.3678794412 * 3e-7);
  EXPECT_TRUE(std::isfinite(y[14])) << y[14];  // largest input with a finite result
  EXPECT_EQ(y[15], kInf);                      // next fp32 up overflows
  EXPECT_NEAR(y[16], std::exp(-87.3365479), std::exp(-87.3365479) * 3e-7);
}

TEST_P(ExpTest, EveryLanePositionAgrees) {
  // The same input at every position of a vector and of the scalar tail gives the same result.
  std::vector<float> x(37), y(37);
  for (float v : {-0.5f, 3.25f, -80.0f, -95.5f}) {
    std::fill(x.begin(), x.end(), v);
    vec_exp(GetParam(), x.data(), y.data(), x.size());
    for (size_t i = 1; i < y.size(); ++i) EXPECT_EQ(y[i], y[0]) << "x = " << v << ", lane " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(AllIsas, ExpTest, ::testing::ValuesIn(available_isas()),
                         [](const ::testing::TestParamInfo<Isa>& info) {
                           return std::string(isa_name(info.param));
                         });

}  // namespace
}  // namespace kvflash::cpu
