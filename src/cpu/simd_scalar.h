// The thin vector type of the portable kernels: one fp32 lane, plain C++ (compiles for baseline
// x86-64, SSE2 at most). Same interface as simd_avx512.h; include only from *_scalar.cpp.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

#include "core/half.hpp"

namespace kvflash::cpu::scalar {

inline constexpr int kLanes = 1;
/// Query heads per score block.
inline constexpr int kScoreHeads = 1;

struct Vec {
  float v;
};

inline Vec vzero() { return {0.0f}; }
inline Vec vset1(float x) { return {x}; }
inline Vec vload(const float* p) { return {*p}; }
inline void vstore(float* p, Vec a) { *p = a.v; }

inline Vec vload_fp16(const uint16_t* p) {
  uint16_t h;
  std::memcpy(&h, p, sizeof(h));
  return {core::fp16_to_float(h)};
}
inline Vec vload_bf16(const uint16_t* p) {
  uint16_t h;
  std::memcpy(&h, p, sizeof(h));
  return {core::bf16_to_float(h)};
}
inline Vec vload_int8(const int8_t* p) { return {static_cast<float>(*p)}; }

inline void vstore_fp16(uint16_t* p, Vec a) {
  const uint16_t h = core::float_to_fp16(a.v);
  std::memcpy(p, &h, sizeof(h));
}
inline void vstore_bf16(uint16_t* p, Vec a) {
  const uint16_t h = core::float_to_bf16(a.v);
  std::memcpy(p, &h, sizeof(h));
}

inline Vec vadd(Vec a, Vec b) { return {a.v + b.v}; }
inline Vec vsub(Vec a, Vec b) { return {a.v - b.v}; }
inline Vec vmul(Vec a, Vec b) { return {a.v * b.v}; }
inline Vec vdiv(Vec a, Vec b) { return {a.v / b.v}; }
/// a * b + c. Not fused: baseline x86-64 has no FMA instruction and a libm fma is very slow.
inline Vec vfma(Vec a, Vec b, Vec c) { return {a.v * b.v + c.v}; }
// Same NaN rule as the x86 instructions: the second operand when either is NaN.
inline Vec vmax(Vec a, Vec b) { return {a.v > b.v ? a.v : b.v}; }
inline Vec vmin(Vec a, Vec b) { return {a.v < b.v ? a.v : b.v}; }

inline float vreduce_add(Vec a) { return a.v; }
inline void vreduce_add4(Vec a, Vec b, Vec c, Vec d, float* out) {
  out[0] = a.v;
  out[1] = b.v;
  out[2] = c.v;
  out[3] = d.v;
}
inline float vreduce_max(Vec a) { return a.v; }

// Primitives of the exp in simd_math-inl.h.
/// Round to nearest, ties to even, for |a| < 2^22 (all the exp needs): adding and subtracting
/// 1.5 * 2^23 leaves no fraction bits under the default rounding mode.
inline Vec vround(Vec a) {
  constexpr float kMagic = 0x1.8p23f;
  return {(a.v + kMagic) - kMagic};  // not folded: the compiler keeps IEEE semantics
}
/// 2^n for integral n in [-126, 127].
inline Vec vpow2i(Vec n) {
  return {std::bit_cast<float>(static_cast<uint32_t>(static_cast<int32_t>(n.v) + 127) << 23)};
}
inline Vec vselect_lt(Vec a, Vec b, Vec x, Vec y) { return a.v < b.v ? x : y; }
inline Vec vselect_nan(Vec a, Vec x, Vec y) { return a.v != a.v ? x : y; }

// This translation unit is built with the library's baseline flags, so core/half.hpp is safe here.
inline float fp16_to_f32(uint16_t h) { return core::fp16_to_float(h); }
inline uint16_t f32_to_fp16(float f) { return core::float_to_fp16(f); }

}  // namespace kvflash::cpu::scalar
