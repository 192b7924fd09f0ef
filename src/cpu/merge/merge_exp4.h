// kvflash's exp (simd_math-inl.h's vexp) on four fp32 lanes of baseline SSE2, with the scalar
// level's operations lane for lane (simd_scalar.h: multiply-adds unfused, rounding by adding and
// subtracting 1.5 * 2^23, 2^n through a truncating conversion, max / min / selects with the same
// NaN rules), so every lane gives scalar::exp_scalar's bits. The merge computes a row's part
// weights four at a time with it (merge_kernel.cpp). Include only from translation units built
// with the library's baseline flags.
#pragma once

#include <emmintrin.h>

#include <cstdint>

namespace kvflash::cpu::sse2 {

inline constexpr int kLanes = 4;

struct Vec {
  __m128 v;
};

inline Vec vzero() { return {_mm_setzero_ps()}; }
inline Vec vset1(float x) { return {_mm_set1_ps(x)}; }
inline Vec vload(const float* p) { return {_mm_loadu_ps(p)}; }
inline void vstore(float* p, Vec a) { _mm_storeu_ps(p, a.v); }
inline Vec vadd(Vec a, Vec b) { return {_mm_add_ps(a.v, b.v)}; }
inline Vec vsub(Vec a, Vec b) { return {_mm_sub_ps(a.v, b.v)}; }
inline Vec vmul(Vec a, Vec b) { return {_mm_mul_ps(a.v, b.v)}; }
/// a * b + c, rounded twice like simd_scalar.h's.
inline Vec vfma(Vec a, Vec b, Vec c) { return vadd(vmul(a, b), c); }
// maxps / minps return the second operand when either is NaN, as simd_scalar.h's a > b ? a : b.
inline Vec vmax(Vec a, Vec b) { return {_mm_max_ps(a.v, b.v)}; }
inline Vec vmin(Vec a, Vec b) { return {_mm_min_ps(a.v, b.v)}; }
/// Round to nearest even by the scalar level's 1.5 * 2^23 trick.
inline Vec vround(Vec a) {
  const __m128 magic = _mm_set1_ps(0x1.8p23f);
  return {_mm_sub_ps(_mm_add_ps(a.v, magic), magic)};
}
/// 2^n for integral n in [-126, 127].
inline Vec vpow2i(Vec n) {
  const __m128i e = _mm_add_epi32(_mm_cvttps_epi32(n.v), _mm_set1_epi32(127));
  return {_mm_castsi128_ps(_mm_slli_epi32(e, 23))};
}
inline Vec vblend(__m128 mask, Vec x, Vec y) {
  return {_mm_or_ps(_mm_and_ps(mask, x.v), _mm_andnot_ps(mask, y.v))};
}
/// a < b ? x : y (false for NaN).
inline Vec vselect_lt(Vec a, Vec b, Vec x, Vec y) { return vblend(_mm_cmplt_ps(a.v, b.v), x, y); }
/// isnan(a) ? x : y.
inline Vec vselect_nan(Vec a, Vec x, Vec y) { return vblend(_mm_cmpunord_ps(a.v, a.v), x, y); }

// clang-format off
#include "cpu/simd_math-inl.h"
// clang-format on

}  // namespace kvflash::cpu::sse2
