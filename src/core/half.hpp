// Exact conversions between fp16 / bf16 bit patterns and fp32 (round to nearest even, NaN kept
// quiet, overflow to inf). Scalar and portable; SIMD kernels convert with their own instructions
// and are tested against these.
#pragma once

#include <bit>
#include <cstdint>

namespace kvflash::core {

inline float bf16_to_float(uint16_t h) { return std::bit_cast<float>(uint32_t{h} << 16); }

inline uint16_t float_to_bf16(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((u >> 16) | 0x0040u);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);                      // round to nearest, ties to even
  return static_cast<uint16_t>(u >> 16);
}

inline float fp16_to_float(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t man = h & 0x3ffu;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (man << 13));  // inf / NaN
  if (exp != 0) return std::bit_cast<float>(sign | ((exp + 112) << 23) | (man << 13));
  // Zero or subnormal: man * 2^-24 is exact in fp32.
  const float mag = static_cast<float>(man) * 0x1p-24f;
  return sign ? -mag : mag;
}

inline uint16_t float_to_fp16(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return sign | 0x7e00u | static_cast<uint16_t>((a >> 13) & 0x3ffu);  // NaN
  if (a >= 0x477ff000u) return sign | 0x7c00u;  // rounds to >= 65520: overflow to inf
  if (a < 0x38800000u) {
    // Result is subnormal (or zero) in fp16: scale so the fp32 adder rounds (RNE) at 2^-24.
    const float mag = std::bit_cast<float>(a);
    const float shifted = mag * 0x1p24f;  // exact: power-of-two scaling of a normal or subnormal
    // Round to nearest even integer without relying on the current rounding mode being exotic.
    const float r = (shifted + 0x1p23f) - 0x1p23f;
    return sign | static_cast<uint16_t>(static_cast<uint32_t>(r));
  }
  // Normal: rebias exponent and round the 13 dropped mantissa bits to nearest even.
  uint32_t v = a - 0x38000000u;  // exponent bias 127 -> 15
  v += 0xfffu + ((v >> 13) & 1u);
  return sign | static_cast<uint16_t>(v >> 13);
}

/// f rounded to the nearest fp16 value (the tests build fp16-exact data with it).
inline float round_to_fp16(float f) { return fp16_to_float(float_to_fp16(f)); }

}  // namespace kvflash::core
