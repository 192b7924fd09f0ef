// FIA kernel body: the AVX512-BF16 P·V micro-kernels and value packing.
// Included only by fia_kernel-inl.h, inside the ISA namespace and after the parts before it
// (no include guard, like it: compiled once per ISA, with that unit's flags).
//
// P·V on the bf16 path, for a bf16 output only (fia_pv_bf16_shape): the weights rounded to bf16 in
// place (fia_round_p_bf16), V packed as key pairs (fia_pack_values_bf16) and vdpbf16ps blocks
// (fia_pv_bf16_tile). Apart from the score kernels because rounding P is a choice of its own
// (docs/semantics.md §0.2 item 2) that the other output dtypes never make.

#ifdef KVFLASH_FIA_BF16_DOT
/// Whether a task on the bf16 score path also runs P·V with vdpbf16ps (P rounded to bf16, the
/// KV dtype, before P·V: docs/semantics.md §0.2 item 2). Only for bf16 output: the rounding of P
/// moves a row's output by at most 2^-8 · max|V| (each weight by at most 2^-8 of itself, the
/// weights summing to the normaliser), half of that output's tolerance (tests/support/compare.hpp);
/// fp32 / fp16 / int8 outputs keep fp32 P.
inline bool fia_pv_bf16_shape(const FiaParams& p) { return p.out_dtype == DType::kBFloat16; }

/// Packs a full value tile (64 rows vrow[c] of Dv bf16, Dv a multiple of 16) as key pairs:
/// vp[(pr * Dv + d) * 2 + e] = value row 2 pr + e, element d, so one vector is 16 elements of
/// two keys, the operand fia_pv_bf16_block multiplies with a broadcast pair of P.
__attribute__((target("avx512bf16"), noinline)) inline void fia_pack_values_bf16(
    uint16_t* vp, const uint16_t* const* vrow, int64_t Dv) {
  alignas(64) static constexpr uint16_t kLo[32] = {0,  32, 1,  33, 2,  34, 3,  35, 4,  36, 5,
                                                   37, 6,  38, 7,  39, 8,  40, 9,  41, 10, 42,
                                                   11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
  const __m512i lo = _mm512_load_si512(kLo);
  const __m512i hi = _mm512_add_epi16(lo, _mm512_set1_epi16(16));
  for (int64_t pr = 0; pr < kFiaKeyTile / 2; ++pr) {
    const uint16_t* a = vrow[2 * pr];
    const uint16_t* b = vrow[2 * pr + 1];
    uint16_t* dst = vp + pr * 2 * Dv;
    int64_t x = 0;
    for (; x + 32 <= Dv; x += 32) {
      const __m512i va = _mm512_loadu_si512(a + x), vb = _mm512_loadu_si512(b + x);
      _mm512_storeu_si512(dst + 2 * x, _mm512_permutex2var_epi16(va, lo, vb));
      _mm512_storeu_si512(dst + 2 * x + 32, _mm512_permutex2var_epi16(va, hi, vb));
    }
    if (x < Dv) {  // 16 left
      const __m512i va = _mm512_maskz_loadu_epi16(0xFFFF, a + x);
      const __m512i vb = _mm512_maskz_loadu_epi16(0xFFFF, b + x);
      _mm512_storeu_si512(dst + 2 * x, _mm512_permutex2var_epi16(va, lo, vb));
    }
  }
}

/// Rounds M rows of 64 weights (kFiaKeyTile floats apart) to bf16 in place: row m's first 128
/// bytes become pb[c] = bf16(s[c]), RNE (vcvtne2ps2bf16; weights below 2^-126 become 0, far
/// inside the bound above).
__attribute__((target("avx512bf16"), noinline)) inline void fia_round_p_bf16(float* s, int64_t M) {
  for (int64_t m = 0; m < M; ++m) {
    float* r = s + m * kFiaKeyTile;
    uint16_t* pb = reinterpret_cast<uint16_t*>(r);
    // Reads floats [c, c + 32) before writing floats [c / 2, c / 2 + 16), all of them read.
    for (int64_t c = 0; c < kFiaKeyTile; c += 32) {
      const __m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(r + c + 16), _mm512_loadu_ps(r + c));
      _mm512_storeu_si512(pb + c, (__m512i)v);
    }
  }
}

template <int R, int C>
__attribute__((target("avx512bf16"), always_inline)) inline void fia_pv_bf16_block(
    const uint16_t* p, int64_t ldp, const uint16_t* vp, int64_t Dv, float* acc, int64_t lda) {
  __m512 a[R][C];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) a[r][c] = _mm512_loadu_ps(acc + r * lda + c * 16);
  for (int64_t pr = 0; pr < kFiaKeyTile / 2; ++pr) {
    __m512bh v[C];
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c)
      v[c] = (__m512bh)_mm512_loadu_si512(vp + (pr * Dv + c * 16) * 2);  // a reinterpretation
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      uint32_t pair;
      __builtin_memcpy(&pair, p + r * ldp + 2 * pr, sizeof(pair));
      const __m512bh pbc = (__m512bh)_mm512_set1_epi32(static_cast<int>(pair));
#pragma GCC unroll 4
      for (int c = 0; c < C; ++c) a[r][c] = _mm512_dpbf16_ps(a[r][c], pbc, v[c]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) _mm512_storeu_ps(acc + r * lda + c * 16, a[r][c]);
}

template <int R>
__attribute__((target("avx512bf16"), always_inline)) inline void fia_pv_bf16_rows(
    const uint16_t* p, int64_t ldp, const uint16_t* vp, int64_t Dv, float* acc, int64_t lda) {
  int64_t x = 0;
  for (; x + 64 <= Dv; x += 64) fia_pv_bf16_block<R, 4>(p, ldp, vp + 2 * x, Dv, acc + x, lda);
  for (; x < Dv; x += 16) fia_pv_bf16_block<R, 1>(p, ldp, vp + 2 * x, Dv, acc + x, lda);
}

/// acc[m][0, Dv) += sum_c p[m][c] * v[c][0, Dv) over a full tile (64 keys) for M rows: p bf16 rows
/// ldp apart, v packed by fia_pack_values_bf16. Each accumulator is one chain over the key pairs
/// in order, the same bits in any row block.
__attribute__((target("avx512bf16"), noinline)) inline void fia_pv_bf16_tile(
    const uint16_t* p, int64_t ldp, const uint16_t* vp, int64_t Dv, float* acc, int64_t M) {
  int64_t m = 0;
  for (; m + 6 <= M; m += 6) fia_pv_bf16_rows<6>(p + m * ldp, ldp, vp, Dv, acc + m * Dv, Dv);
  switch (M - m) {
    case 1:
      fia_pv_bf16_rows<1>(p + m * ldp, ldp, vp, Dv, acc + m * Dv, Dv);
      break;
    case 2:
      fia_pv_bf16_rows<2>(p + m * ldp, ldp, vp, Dv, acc + m * Dv, Dv);
      break;
    case 3:
      fia_pv_bf16_rows<3>(p + m * ldp, ldp, vp, Dv, acc + m * Dv, Dv);
      break;
    case 4:
      fia_pv_bf16_rows<4>(p + m * ldp, ldp, vp, Dv, acc + m * Dv, Dv);
      break;
    case 5:
      fia_pv_bf16_rows<5>(p + m * ldp, ldp, vp, Dv, acc + m * Dv, Dv);
      break;
    default:
      break;
  }
}
#endif  // KVFLASH_FIA_BF16_DOT
