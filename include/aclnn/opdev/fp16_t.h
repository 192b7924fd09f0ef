// op::fp16_t: the IEEE binary16 value type of CANN's opdev headers (C++ only).
//
// Two bytes, trivially copyable, so std::vector<op::fp16_t> is a buffer of fp16 bit patterns.
// Construction from any arithmetic value rounds to nearest, ties to even, in one step from the
// widest type given (a double is not rounded through float first); overflow gives +-inf, NaN stays
// NaN. static_cast<float>(h) is exact.
#ifndef KVFLASH_ACLNN_OPDEV_FP16_T_H_
#define KVFLASH_ACLNN_OPDEV_FP16_T_H_

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace op {

struct fp16_t {
  uint16_t val = 0;

  fp16_t() = default;
  template <typename T, typename std::enable_if<std::is_arithmetic<T>::value, int>::type = 0>
  fp16_t(T v) : val(from_double(static_cast<double>(v))) {}  // NOLINT: implicit, as in CANN

  /// The value (exact).
  operator float() const { return to_float(val); }  // NOLINT: implicit, as in CANN
  float to_float() const { return to_float(val); }

  static fp16_t from_bits(uint16_t bits) {
    fp16_t h;
    h.val = bits;
    return h;
  }

  static float to_float(uint16_t h) {
    const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    const uint32_t man = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0x1f) {
      bits = sign | 0x7f800000u | (man << 13);
    } else if (exp != 0) {
      bits = sign | ((exp + 112u) << 23) | (man << 13);
    } else {
      const float mag = static_cast<float>(man) * 5.9604644775390625e-8f;  // man * 2^-24, exact
      return sign ? -mag : mag;
    }
    float f;
    std::memcpy(&f, &bits, sizeof(f));
    return f;
  }

  /// Round-to-nearest-even conversion. Every integer and every double converts exactly this way
  /// (integers above 2^53 are first rounded to double, which cannot change the fp16 result since
  /// those are far above the fp16 range).
  static uint16_t from_double(double d) {
    if (std::isnan(d)) return std::signbit(d) ? 0xfe00u : 0x7e00u;
    const uint16_t sign = std::signbit(d) ? 0x8000u : 0u;
    const double a = std::fabs(d);
    if (a >= 65520.0) return sign | 0x7c00u;  // 65520 = max fp16 + half an ulp: rounds to inf
    if (a < 6.103515625e-05) {                // below 2^-14: subnormal, quantum 2^-24
      const double q = std::nearbyint(a * 16777216.0);  // exact scaling; nearbyint rounds to even
      return sign | static_cast<uint16_t>(q);           // q == 1024 is the smallest normal: fine
    }
    int e;
    const double m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
    // 11 significant bits: scale the mantissa to [1024, 2048) and round to even.
    double q = std::nearbyint(std::ldexp(m, 11));
    int exp = e - 1;  // a = (q / 1024) * 2^exp
    if (q >= 2048.0) {
      q /= 2.0;
      ++exp;
    }
    if (exp > 15) return sign | 0x7c00u;
    return sign | static_cast<uint16_t>(((exp + 15) << 10) | (static_cast<uint32_t>(q) - 1024u));
  }
};

static_assert(sizeof(fp16_t) == 2, "op::fp16_t must be two bytes");

}  // namespace op

#endif  // KVFLASH_ACLNN_OPDEV_FP16_T_H_
