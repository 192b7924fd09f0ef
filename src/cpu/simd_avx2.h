// The thin vector type of the AVX2 kernels: 8 fp32 lanes (AVX2 + FMA + F16C). Include only from
// *_avx2.cpp translation units. Same interface as simd_avx512.h.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace kvflash::cpu::avx2 {

inline constexpr int kLanes = 8;
/// Query heads per score block (4 rows x kScoreHeads accumulators fit the 16 registers).
inline constexpr int kScoreHeads = 2;

struct Vec {
  __m256 v;
};

inline Vec vzero() { return {_mm256_setzero_ps()}; }
inline Vec vset1(float x) { return {_mm256_set1_ps(x)}; }
inline Vec vload(const float* p) { return {_mm256_loadu_ps(p)}; }
inline void vstore(float* p, Vec a) { _mm256_storeu_ps(p, a.v); }

// Widening loads of kLanes elements; any alignment.
inline Vec vload_fp16(const uint16_t* p) {
  return {_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)))};
}
inline Vec vload_bf16(const uint16_t* p) {
  const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return {_mm256_castsi256_ps(_mm256_slli_epi32(w, 16))};
}
inline Vec vload_int8(const int8_t* p) {
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  return {_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b))};
}

// Narrowing stores of kLanes elements (same rounding as simd_avx512.h's).
inline void vstore_fp16(uint16_t* p, Vec a) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p),
                   _mm256_cvtps_ph(a.v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
inline void vstore_bf16(uint16_t* p, Vec a) {
  const __m256i u = _mm256_castps_si256(a.v);
  const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i rne =
      _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(odd, _mm256_set1_epi32(0x7fff))), 16);
  const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
  const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(a.v, a.v, _CMP_UNORD_Q));
  const __m256i r = _mm256_blendv_epi8(rne, quiet, nan);  // every value < 2^16: packus is exact
  const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_castsi256_si128(packed));
}

inline Vec vadd(Vec a, Vec b) { return {_mm256_add_ps(a.v, b.v)}; }
inline Vec vsub(Vec a, Vec b) { return {_mm256_sub_ps(a.v, b.v)}; }
inline Vec vmul(Vec a, Vec b) { return {_mm256_mul_ps(a.v, b.v)}; }
inline Vec vdiv(Vec a, Vec b) { return {_mm256_div_ps(a.v, b.v)}; }
/// a * b + c, fused.
inline Vec vfma(Vec a, Vec b, Vec c) { return {_mm256_fmadd_ps(a.v, b.v, c.v)}; }
// max/min follow the x86 rule: when either operand is NaN the second operand is returned.
inline Vec vmax(Vec a, Vec b) { return {_mm256_max_ps(a.v, b.v)}; }
inline Vec vmin(Vec a, Vec b) { return {_mm256_min_ps(a.v, b.v)}; }

/// Horizontal sum in a fixed order (halving tree).
inline float vreduce_add(Vec a) {
  const __m128 q = _mm_add_ps(_mm256_castps256_ps128(a.v), _mm256_extractf128_ps(a.v, 1));
  const __m128 e = _mm_add_ps(q, _mm_movehl_ps(q, q));
  return _mm_cvtss_f32(_mm_add_ss(e, _mm_movehdup_ps(e)));
}
/// The horizontal sums of four vectors at once into out[0..3] (fixed order).
inline void vreduce_add4(Vec a, Vec b, Vec c, Vec d, float* out) {
  const __m256 ab = _mm256_hadd_ps(a.v, b.v);  // a01 a23 b01 b23 | a45 a67 b45 b67
  const __m256 cd = _mm256_hadd_ps(c.v, d.v);
  const __m256 abcd = _mm256_hadd_ps(ab, cd);  // a0-3 b0-3 c0-3 d0-3 | a4-7 b4-7 c4-7 d4-7
  _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1)));
}
inline float vreduce_max(Vec a) {
  const __m128 q = _mm_max_ps(_mm256_castps256_ps128(a.v), _mm256_extractf128_ps(a.v, 1));
  const __m128 e = _mm_max_ps(q, _mm_movehl_ps(q, q));
  return _mm_cvtss_f32(_mm_max_ss(e, _mm_movehdup_ps(e)));
}

// Primitives of the exp in simd_math-inl.h.
/// Round to nearest integer, ties to even.
inline Vec vround(Vec a) {
  return {_mm256_round_ps(a.v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)};
}
/// 2^n for integral n in [-126, 127].
inline Vec vpow2i(Vec n) {
  const __m256i e = _mm256_add_epi32(_mm256_cvtps_epi32(n.v), _mm256_set1_epi32(127));
  return {_mm256_castsi256_ps(_mm256_slli_epi32(e, 23))};
}
/// a < b ? x : y (false for NaN).
inline Vec vselect_lt(Vec a, Vec b, Vec x, Vec y) {
  return {_mm256_blendv_ps(y.v, x.v, _mm256_cmp_ps(a.v, b.v, _CMP_LT_OQ))};
}
/// isnan(a) ? x : y.
inline Vec vselect_nan(Vec a, Vec x, Vec y) {
  return {_mm256_blendv_ps(y.v, x.v, _mm256_cmp_ps(a.v, a.v, _CMP_UNORD_Q))};
}

// Scalar conversions with F16C (see simd_avx512.h for why not core/half.hpp).
inline float fp16_to_f32(uint16_t h) { return _cvtsh_ss(h); }
inline uint16_t f32_to_fp16(float f) {
  return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

}  // namespace kvflash::cpu::avx2
