// The thin vector type of the AVX-512 kernels: 16 fp32 lanes. Include only from *_avx512.cpp
// translation units (compiled with the AVX-512 flags). Every kernel body (*-inl.h) is written
// against this interface; simd_avx2.h and simd_scalar.h provide the same names.
#pragma once

// GCC 12's AVX-512 intrinsics initialise their "undefined" operands from themselves, which its
// own -Wuninitialized then reports at every use; the pragmas silence that inside the header only.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#pragma GCC diagnostic pop

#include <cstdint>

namespace kvflash::cpu::avx512 {

inline constexpr int kLanes = 16;
/// Query heads per score block (4 rows x kScoreHeads accumulators stay in the 32 registers).
inline constexpr int kScoreHeads = 4;

struct Vec {
  __m512 v;
};

inline Vec vzero() { return {_mm512_setzero_ps()}; }
inline Vec vset1(float x) { return {_mm512_set1_ps(x)}; }
inline Vec vload(const float* p) { return {_mm512_loadu_ps(p)}; }
inline void vstore(float* p, Vec a) { _mm512_storeu_ps(p, a.v); }

// Widening loads of kLanes elements; any alignment.
inline Vec vload_fp16(const uint16_t* p) {
  return {_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)))};
}
inline Vec vload_bf16(const uint16_t* p) {
  const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return {_mm512_castsi512_ps(_mm512_slli_epi32(w, 16))};
}
inline Vec vload_int8(const int8_t* p) {
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return {_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b))};
}

// Narrowing stores of kLanes elements, any alignment, rounding to nearest even exactly like the
// scalar f32_to_fp16 / f32_to_bf16 (NaN stays a quiet NaN with the same top payload bits). The
// bf16 rounding is integer arithmetic, not vcvtneps2bf16, which flushes subnormal inputs.
inline void vstore_fp16(uint16_t* p, Vec a) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p),
                      _mm512_cvtps_ph(a.v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
inline void vstore_bf16(uint16_t* p, Vec a) {
  const __m512i u = _mm512_castps_si512(a.v);
  const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  const __m512i rne =
      _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(odd, _mm512_set1_epi32(0x7fff))), 16);
  const __m512i quiet = _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
  const __mmask16 nan = _mm512_cmp_ps_mask(a.v, a.v, _CMP_UNORD_Q);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p),
                      _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(nan, rne, quiet)));
}

inline Vec vadd(Vec a, Vec b) { return {_mm512_add_ps(a.v, b.v)}; }
inline Vec vsub(Vec a, Vec b) { return {_mm512_sub_ps(a.v, b.v)}; }
inline Vec vmul(Vec a, Vec b) { return {_mm512_mul_ps(a.v, b.v)}; }
inline Vec vdiv(Vec a, Vec b) { return {_mm512_div_ps(a.v, b.v)}; }
/// a * b + c, fused.
inline Vec vfma(Vec a, Vec b, Vec c) { return {_mm512_fmadd_ps(a.v, b.v, c.v)}; }
// max/min follow the x86 rule: when either operand is NaN the second operand is returned.
inline Vec vmax(Vec a, Vec b) { return {_mm512_max_ps(a.v, b.v)}; }
inline Vec vmin(Vec a, Vec b) { return {_mm512_min_ps(a.v, b.v)}; }

/// Horizontal sum in a fixed order (halving tree), so results do not depend on anything but input.
inline float vreduce_add(Vec a) {
  const __m256 h =
      _mm256_add_ps(_mm512_castps512_ps256(a.v),
                    _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a.v), 1)));
  const __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  const __m128 e = _mm_add_ps(q, _mm_movehl_ps(q, q));
  return _mm_cvtss_f32(_mm_add_ss(e, _mm_movehdup_ps(e)));
}
/// The horizontal sums of four vectors at once into out[0..3] (fixed order).
inline void vreduce_add4(Vec a, Vec b, Vec c, Vec d, float* out) {
  const auto fold = [](__m512 x) {
    return _mm256_add_ps(_mm512_castps512_ps256(x),
                         _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)));
  };
  const __m256 ab = _mm256_hadd_ps(fold(a.v), fold(b.v));  // a01 a23 b01 b23 | a45 a67 b45 b67
  const __m256 cd = _mm256_hadd_ps(fold(c.v), fold(d.v));
  const __m256 abcd = _mm256_hadd_ps(ab, cd);  // a0-3 b0-3 c0-3 d0-3 | a4-7 b4-7 c4-7 d4-7
  _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1)));
}
inline float vreduce_max(Vec a) {
  const __m256 h =
      _mm256_max_ps(_mm512_castps512_ps256(a.v),
                    _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a.v), 1)));
  const __m128 q = _mm_max_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  const __m128 e = _mm_max_ps(q, _mm_movehl_ps(q, q));
  return _mm_cvtss_f32(_mm_max_ss(e, _mm_movehdup_ps(e)));
}

// Primitives of the exp in simd_math-inl.h.
/// Round to nearest integer, ties to even.
inline Vec vround(Vec a) {
  return {_mm512_roundscale_ps(a.v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)};
}
/// 2^n for integral n in [-126, 127].
inline Vec vpow2i(Vec n) {
  const __m512i e = _mm512_add_epi32(_mm512_cvtps_epi32(n.v), _mm512_set1_epi32(127));
  return {_mm512_castsi512_ps(_mm512_slli_epi32(e, 23))};
}
/// a < b ? x : y (false for NaN).
inline Vec vselect_lt(Vec a, Vec b, Vec x, Vec y) {
  return {_mm512_mask_blend_ps(_mm512_cmp_ps_mask(a.v, b.v, _CMP_LT_OQ), y.v, x.v)};
}
/// isnan(a) ? x : y.
inline Vec vselect_nan(Vec a, Vec x, Vec y) {
  return {_mm512_mask_blend_ps(_mm512_cmp_ps_mask(a.v, a.v, _CMP_UNORD_Q), y.v, x.v)};
}

// Scalar conversions with the F16C instructions (exact, round to nearest even). The kernels use
// these instead of core/half.hpp: an inline function from a shared header compiled into this
// translation unit could be chosen by the linker for a plain-x86-64 caller.
inline float fp16_to_f32(uint16_t h) { return _cvtsh_ss(h); }
inline uint16_t f32_to_fp16(float f) {
  return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

}  // namespace kvflash::cpu::avx512
