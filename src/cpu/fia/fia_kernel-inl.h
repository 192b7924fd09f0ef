// The FIA / PFA prefill kernel body (see fia_kernel.hpp), compiled once per ISA: included inside
// kvflash::cpu::<isa> after simd_<isa>.h, simd_math-inl.h and softmax_state.h (no include guard
// on purpose).
//
// Matrix-engine seam. The bf16 path's two products (fia_qk_bf16_tile, fia_pv_bf16_tile) run on
// the matrix engine when the translation unit defines KVFLASH_FIA_TILES (the AMX level:
// fia_tiles-inl.h, FiaTiles) and the task's shape suits the tiles. Without pse or mask, the key
// tile's band and online-softmax fold go with the products, 16 rows at a time (FiaTiles::
// whole_tile, fold_tile), with the same operations per row as below, so the same bits; staging,
// packing, the other tiles' softmax and the output stay this code.

// Register blocks: R score rows x C vectors (AVX-512 6x4 = 24 accumulators of 32 registers, with
// room for the 4 key / value vectors and a broadcast; AVX2 4x2 = 8 of 16; scalar 4x2). Every
// element's arithmetic is the same in any block shape (one fp32 chain in a fixed order), so the
// blocking never changes a bit.
inline constexpr int kFiaVecs = kLanes >= 16 ? 4 : 2;
inline constexpr int kFiaRows = kLanes >= 16 ? 6 : 4;

/// Calls f(integral_constant<R>) for the row-block remainder r in [1, kFiaRows).
template <class F>
inline void fia_rows_tail(int64_t r, F&& f) {
  switch (r) {
    case 1: f(std::integral_constant<int, 1>{}); break;
    case 2: f(std::integral_constant<int, 2>{}); break;
    case 3: f(std::integral_constant<int, 3>{}); break;
    case 4: if constexpr (kFiaRows > 4) f(std::integral_constant<int, 4>{}); break;
    case 5: if constexpr (kFiaRows > 5) f(std::integral_constant<int, 5>{}); break;
    default: break;
  }
}

template <int R>
inline void fia_qk_block(const float* q, int64_t ldq, const float* kt, int64_t ldk, float* s,
                         int64_t lds, int64_t D) {
  Vec acc[R][kFiaVecs];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < kFiaVecs; ++c) acc[r][c] = vzero();
  for (int64_t d = 0; d < D; ++d) {
    Vec kv[kFiaVecs];
    for (int c = 0; c < kFiaVecs; ++c) kv[c] = vload(kt + d * ldk + c * kLanes);
    for (int r = 0; r < R; ++r) {
      const Vec qb = vset1(q[r * ldq + d]);
      for (int c = 0; c < kFiaVecs; ++c) acc[r][c] = vfma(qb, kv[c], acc[r][c]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < kFiaVecs; ++c) vstore(s + r * lds + c * kLanes, acc[r][c]);
}

/// s[m][0, n) = sum_d q[m][d] * kt[d][m'] for M rows; n a multiple of kFiaVecs * kLanes.
inline void fia_qk_tile(const float* q, int64_t ldq, const float* kt, int64_t ldk, float* s,
                        int64_t lds, int64_t M, int64_t n, int64_t D) {
  for (int64_t c0 = 0; c0 < n; c0 += kFiaVecs * kLanes) {
    int64_t m = 0;
    for (; m + kFiaRows <= M; m += kFiaRows)
      fia_qk_block<kFiaRows>(q + m * ldq, ldq, kt + c0, ldk, s + m * lds + c0, lds, D);
    fia_rows_tail(M - m, [&](auto r) {
      fia_qk_block<decltype(r)::value>(q + m * ldq, ldq, kt + c0, ldk, s + m * lds + c0, lds, D);
    });
  }
}

template <int R, int C>
inline void fia_pv_block(const float* p, int64_t ldp, const float* v, int64_t ldv, float* acc,
                         int64_t lda, int64_t n) {
  Vec a[R][C];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) a[r][c] = vload(acc + r * lda + c * kLanes);
  for (int64_t j = 0; j < n; ++j) {
    Vec vv[C];
    for (int c = 0; c < C; ++c) vv[c] = vload(v + j * ldv + c * kLanes);
    for (int r = 0; r < R; ++r) {
      const Vec pb = vset1(p[r * ldp + j]);
      for (int c = 0; c < C; ++c) a[r][c] = vfma(pb, vv[c], a[r][c]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) vstore(acc + r * lda + c * kLanes, a[r][c]);
}

template <int R>
inline void fia_pv_rows(const float* p, int64_t ldp, const float* v, int64_t ldv, float* acc,
                        int64_t lda, int64_t n, int64_t dv) {
  int64_t d = 0;
  for (; d + kFiaVecs * kLanes <= dv; d += kFiaVecs * kLanes)
    fia_pv_block<R, kFiaVecs>(p, ldp, v + d, ldv, acc + d, lda, n);
  for (; d < dv; d += kLanes) fia_pv_block<R, 1>(p, ldp, v + d, ldv, acc + d, lda, n);
}

/// acc[m][0, dv) += sum_j p[m][j] * v[j][0, dv) for M rows, j < n; dv a multiple of kLanes.
inline void fia_pv_tile(const float* p, int64_t ldp, const float* v, int64_t ldv, float* acc,
                        int64_t lda, int64_t M, int64_t n, int64_t dv) {
  int64_t m = 0;
  for (; m + kFiaRows <= M; m += kFiaRows)
    fia_pv_rows<kFiaRows>(p + m * ldp, ldp, v, ldv, acc + m * lda, lda, n, dv);
  fia_rows_tail(M - m, [&](auto r) {
    fia_pv_rows<decltype(r)::value>(p + m * ldp, ldp, v, ldv, acc + m * lda, lda, n, dv);
  });
}

#ifdef KVFLASH_FIA_BF16_DOT
// Scores of a bf16 query against bf16 keys with AVX512-BF16 (only the avx512 translation unit
// defines KVFLASH_FIA_BF16_DOT; fia_run enters it only at the avx512bf16 level): vdpbf16ps
// multiplies bf16 pairs exactly and adds them to fp32 lanes, so nothing the fp32 path keeps is
// rounded away; the sums round in another order (allowed), and inputs and results below 2^-126
// are flushed to zero (negligible next to the tolerance). Lanes are 16 keys: the key tile is
// packed as [key group c][pair pr][16 keys][2] (fia_pack_keys_bf16), so one load feeds a row
// block, and a query pair is one 32-bit broadcast. Each score is one chain over pr = 0, 1, ... in
// order, then times the scale: the same bits in any row block.
template <int R>
__attribute__((target("avx512bf16"), always_inline)) inline void fia_qk_bf16_block(
    const uint16_t* q, int64_t ldq, const uint16_t* kp, int64_t pairs, float* s, int64_t lds,
    float scale) {
  __m512 a[R][4];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) a[r][c] = _mm512_setzero_ps();
  for (int64_t pr = 0; pr < pairs; ++pr) {
    __m512bh k[4];
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c)
      k[c] = (__m512bh)_mm512_loadu_si512(kp + (c * pairs + pr) * 32);  // a reinterpretation
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      uint32_t pair;
      __builtin_memcpy(&pair, q + r * ldq + 2 * pr, sizeof(pair));
      const __m512bh qb = (__m512bh)_mm512_set1_epi32(static_cast<int>(pair));
#pragma GCC unroll 4
      for (int c = 0; c < 4; ++c) a[r][c] = _mm512_dpbf16_ps(a[r][c], qb, k[c]);
    }
  }
  const __m512 sc = _mm512_set1_ps(scale);
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) _mm512_storeu_ps(s + r * lds + c * 16, _mm512_mul_ps(a[r][c], sc));
}

/// Packs pairs [0, np) of 16 keys (rows src[0..15], bf16, pair x at src[r] + 2 x; null: a key
/// past the tile, packed as 0) into dst[(pr0 + x) * 16 + r] (32-bit units). Blocks of 16 pairs
/// are a 16 x 16 transpose of 32-bit elements in registers (16 vector stores instead of 256
/// scalar ones: the scalar packing's stores were the task body's largest cost); the remainder
/// is scalar.
__attribute__((target("avx512f"), always_inline)) inline void fia_pack16(
    uint32_t* dst, const uint16_t* const* src, int64_t np) {
  int64_t x = 0;
  for (; x + 16 <= np; x += 16) {
    __m512i r[16], t[16], u[16];
#pragma GCC unroll 16
    for (int k = 0; k < 16; ++k)
      r[k] = src[k] ? _mm512_loadu_si512(src[k] + 2 * x) : _mm512_setzero_si512();
#pragma GCC unroll 8
    for (int k = 0; k < 16; k += 2) {
      t[k] = _mm512_unpacklo_epi32(r[k], r[k + 1]);
      t[k + 1] = _mm512_unpackhi_epi32(r[k], r[k + 1]);
    }
    // u[4 g + e], lane l: element 4 l + e of keys 4 g .. 4 g + 3.
#pragma GCC unroll 4
    for (int g = 0; g < 4; ++g) {
      u[4 * g] = _mm512_unpacklo_epi64(t[4 * g], t[4 * g + 2]);
      u[4 * g + 1] = _mm512_unpackhi_epi64(t[4 * g], t[4 * g + 2]);
      u[4 * g + 2] = _mm512_unpacklo_epi64(t[4 * g + 1], t[4 * g + 3]);
      u[4 * g + 3] = _mm512_unpackhi_epi64(t[4 * g + 1], t[4 * g + 3]);
    }
#pragma GCC unroll 4
    for (int e = 0; e < 4; ++e) {
      const __m512i v0 = _mm512_shuffle_i32x4(u[e], u[4 + e], 0x88);
      const __m512i w0 = _mm512_shuffle_i32x4(u[e], u[4 + e], 0xDD);
      const __m512i v1 = _mm512_shuffle_i32x4(u[8 + e], u[12 + e], 0x88);
      const __m512i w1 = _mm512_shuffle_i32x4(u[8 + e], u[12 + e], 0xDD);
      _mm512_storeu_si512(dst + (x + e) * 16, _mm512_shuffle_i32x4(v0, v1, 0x88));
      _mm512_storeu_si512(dst + (x + 4 + e) * 16, _mm512_shuffle_i32x4(w0, w1, 0x88));
      _mm512_storeu_si512(dst + (x + 8 + e) * 16, _mm512_shuffle_i32x4(v0, v1, 0xDD));
      _mm512_storeu_si512(dst + (x + 12 + e) * 16, _mm512_shuffle_i32x4(w0, w1, 0xDD));
    }
  }
  for (; x < np; ++x) {
    for (int k = 0; k < 16; ++k) {
      uint32_t v = 0;
      if (src[k]) __builtin_memcpy(&v, src[k] + 2 * x, 4);
      dst[x * 16 + k] = v;
    }
  }
}

/// Packs a key tile: keys c = 0..63 (rows k[c] of Dk bf16 and, with rope, kr[c] of Dr; null past
/// the tile) into kp's [group c / 16][pair][16][2] layout (fia_qk_bf16_block).
__attribute__((target("avx512f"), noinline)) inline void fia_pack_keys_bf16(
    uint16_t* kp, const uint16_t* const* k, const uint16_t* const* kr, int64_t Dk, int64_t Dr) {
  const int64_t pairs = (Dk + Dr) / 2;
  for (int64_t grp = 0; grp < 4; ++grp) {
    uint32_t* dst = reinterpret_cast<uint32_t*>(kp) + grp * pairs * 16;
    fia_pack16(dst, k + grp * 16, Dk / 2);
    if (Dr) fia_pack16(dst + Dk / 2 * 16, kr + grp * 16, Dr / 2);
  }
}

/// s[m][0, 64) = scale * q[m] . k for M rows (q bf16 rows of 2 * pairs elements, ldq apart).
__attribute__((target("avx512bf16"), noinline)) inline void fia_qk_bf16_tile(
    const uint16_t* q, int64_t ldq, const uint16_t* kp, int64_t pairs, float* s, int64_t lds,
    int64_t M, float scale) {
  int64_t m = 0;
  for (; m + 6 <= M; m += 6) fia_qk_bf16_block<6>(q + m * ldq, ldq, kp, pairs, s + m * lds, lds, scale);
  switch (M - m) {
    case 1: fia_qk_bf16_block<1>(q + m * ldq, ldq, kp, pairs, s + m * lds, lds, scale); break;
    case 2: fia_qk_bf16_block<2>(q + m * ldq, ldq, kp, pairs, s + m * lds, lds, scale); break;
    case 3: fia_qk_bf16_block<3>(q + m * ldq, ldq, kp, pairs, s + m * lds, lds, scale); break;
    case 4: fia_qk_bf16_block<4>(q + m * ldq, ldq, kp, pairs, s + m * lds, lds, scale); break;
    case 5: fia_qk_bf16_block<5>(q + m * ldq, ldq, kp, pairs, s + m * lds, lds, scale); break;
    default: break;
  }
}

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

/// Element x of a fp16 / bf16 / fp32 / int8 array, widened exactly.
inline float fia_load(const void* base, DType t, int64_t x) {
  if (t == DType::kFloat32) return static_cast<const float*>(base)[x];
  if (t == DType::kInt8) return static_cast<float>(static_cast<const int8_t*>(base)[x]);
  const uint16_t h = static_cast<const uint16_t*>(base)[x];
  if (t == DType::kFloat16) return fp16_to_f32(h);
  uint32_t u = static_cast<uint32_t>(h) << 16;
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
}

/// n (a multiple of kLanes) contiguous elements widened into dst.
inline void fia_widen_row(const void* base, DType t, int64_t x, float* dst, int64_t n) {
  if (t == DType::kFloat32) {
    for (int64_t i = 0; i < n; i += kLanes) vstore(dst + i, vload(static_cast<const float*>(base) + x + i));
  } else if (t == DType::kFloat16) {
    for (int64_t i = 0; i < n; i += kLanes)
      vstore(dst + i, vload_fp16(static_cast<const uint16_t*>(base) + x + i));
  } else if (t == DType::kInt8) {
    for (int64_t i = 0; i < n; i += kLanes)
      vstore(dst + i, vload_int8(static_cast<const int8_t*>(base) + x + i));
  } else {
    for (int64_t i = 0; i < n; i += kLanes)
      vstore(dst + i, vload_bf16(static_cast<const uint16_t*>(base) + x + i));
  }
}

/// Software prefetch of a row's cache lines into L2 while the tile before it is computed: K/V
/// rows of one KV head are 1-4 KB apart in BSH/BSND (and paged blocks scattered), which hardware
/// prefetchers follow poorly; without it staging V stalled on every row (perf: half the task
/// body's samples). asm volatile for the reason given at ifa_inputs-inl.h's prefetch_row (GCC
/// deletes a helper whose only effect is __builtin_prefetch).
inline void fia_prefetch_row(const void* row, int64_t bytes) {
  const auto* r = static_cast<const std::byte*>(row);
  for (int64_t o = 0; o < bytes; o += 64) __asm__ volatile("prefetcht1 %0" : : "m"(*(r + o)));
}

/// Which K/V tensor fia_kv_row addresses.
enum class FiaKv { kKey, kValue, kKeyRope };

/// Base pointer and element offset of position j's row (KV head n2) of key / value / key rope in
/// batch b: the shared prefix for j < prefix_len, then the batch's tensor (its list entry, or
/// its rows in the one tensor, or its blocks of the paged cache).
inline const void* fia_kv_row(const FiaParams& p, const FiaPointers& d, const FiaBatch& bt, int64_t b,
                              FiaKv w, int64_t n2, int64_t j, int64_t* elem) {
  if (j < p.prefix_len) {
    const bool key = w == FiaKv::kKey;
    *elem = j * (key ? p.kp_pos : p.vp_pos) + n2 * (key ? p.kp_head : p.vp_head);
    return key ? d.k_prefix : d.v_prefix;
  }
  j -= p.prefix_len;
  const void* base = w == FiaKv::kKey ? (d.k_list ? d.k_list[b] : d.k)
                     : w == FiaKv::kValue ? (d.v_list ? d.v_list[b] : d.v)
                                          : d.k_rope;
  const int64_t pos = w == FiaKv::kKey ? p.k_pos : w == FiaKv::kValue ? p.v_pos : p.kr_pos;
  const int64_t head = w == FiaKv::kKey ? p.k_head : w == FiaKv::kValue ? p.v_head : p.kr_head;
  if (p.paged) {
    const int64_t blk = d.block_table[bt.k_offset + j / p.block_size];
    const int64_t bs = w == FiaKv::kKey ? p.k_block : w == FiaKv::kValue ? p.v_block : p.kr_block;
    *elem = blk * bs + (j % p.block_size) * pos + n2 * head;
  } else {
    const int64_t off = w == FiaKv::kKey ? bt.k_offset : w == FiaKv::kValue ? bt.v_offset : bt.kr_offset;
    *elem = off + j * pos + n2 * head;
  }
  return base;
}

/// The dequantisation parameter (scale or offset) of element x of position j, KV head n2.
inline float fia_dq_param(const FiaDequant& q, const void* t, int64_t at, int64_t b, int64_t n2,
                          int64_t tok, int64_t x) {
  switch (q.mode) {
    case FiaDequant::Mode::kTensor:
      return fia_load(t, q.dtype, at);
    case FiaDequant::Mode::kChannel:
      return fia_load(t, q.dtype, at + n2 * q.chan_head + x);
    case FiaDequant::Mode::kToken:
      break;
  }
  return fia_load(t, q.dtype, at + b * q.tok_batch + tok * q.tok_pos);
}

/// Row x[0, n) of int8 K or V, dequantised in place: (x + offset) * scale, in fp32 (two roundings
/// per element, far inside the tolerance). Done while staging, so once per key tile and KV head
/// per task and shared by all the task's score rows; a decode kernel, which reads each row for
/// one query, folds the parameters into the query and the accumulator instead (IFA).
inline void fia_dequant_row(const FiaDequant& q, const void* sc, const void* of, int64_t b,
                            int64_t n2, int64_t tok, float* x, int64_t n, int64_t stride) {
  if (q.mode != FiaDequant::Mode::kChannel) {
    const float s = fia_dq_param(q, sc, q.scale_at, b, n2, tok, 0);
    const float o = q.has_offset ? fia_dq_param(q, of, q.offset_at, b, n2, tok, 0) : 0.0f;
    for (int64_t e = 0; e < n; ++e) x[e * stride] = (x[e * stride] + o) * s;
    return;
  }
  for (int64_t e = 0; e < n; ++e) {
    const float s = fia_dq_param(q, sc, q.scale_at, b, n2, tok, e);
    const float o = q.has_offset ? fia_dq_param(q, of, q.offset_at, b, n2, tok, e) : 0.0f;
    x[e * stride] = (x[e * stride] + o) * s;
  }
}

/// Whether the task runs the bf16 dot path (a property of the problem and the ISA entry only).
inline bool fia_bf16_dot_shape(const FiaParams& p) {
  return p.dtype == DType::kBFloat16 && !p.kv_int8 && p.head_dim % 2 == 0 && p.rope_dim % 2 == 0;
}

/// The visible positions of a key tile (first position j0, n positions) for the rows of a query
/// tile (first query row i0, G heads a row, the batch's band): task row m sees [lo(m), hi(m)],
/// empty when lo > hi; the same for a row's G heads (bands have no head dimension).
struct FiaBand {
  int64_t G, i0, band_lo, band_hi, j0, n;
  int64_t lo(int64_t m) const { return std::max<int64_t>(0, i0 + m / G + band_lo - j0); }
  int64_t hi(int64_t m) const { return std::min<int64_t>(n - 1, i0 + m / G + band_hi - j0); }
};

#ifdef KVFLASH_FIA_TILES
#include "cpu/fia/fia_tiles-inl.h"
#endif

#ifdef KVFLASH_FIA_BF16_DOT
/// Key tile t of (batch b, KV head n2) packed for the bf16 path into dst, the FiaPackedKv layout:
/// its keys as fia_task_body packs them (positions past the tile 0), then, for a whole tile, its
/// values. The same rows through the same packing functions as the task's own packing, so the
/// same operands.
inline void fia_pack_tile_bf16(const FiaParams& p, const FiaPointers& d, int64_t b, int64_t n2,
                               int64_t t, uint16_t* dst) {
  const FiaBatch& bt = p.batches[b];
  const int64_t Dk = p.head_dim, Dr = p.rope_dim, Dv = p.value_dim, Bk = kFiaKeyTile;
  const int64_t j0 = t * Bk, n = std::min(Bk, bt.kv_len - j0);
  const uint16_t* krow[kFiaKeyTile];
  const uint16_t* rrow[kFiaKeyTile];
  const uint16_t* vrow[kFiaKeyTile];
  for (int64_t c = 0; c < Bk; ++c) {
    krow[c] = rrow[c] = vrow[c] = nullptr;
    if (c >= n) continue;
    int64_t kx = 0, rx = 0, vx = 0;
    krow[c] =
        static_cast<const uint16_t*>(fia_kv_row(p, d, bt, b, FiaKv::kKey, n2, j0 + c, &kx)) + kx;
    if (Dr)
      rrow[c] =
          static_cast<const uint16_t*>(fia_kv_row(p, d, bt, b, FiaKv::kKeyRope, n2, j0 + c, &rx)) +
          rx;
    vrow[c] =
        static_cast<const uint16_t*>(fia_kv_row(p, d, bt, b, FiaKv::kValue, n2, j0 + c, &vx)) + vx;
  }
  fia_pack_keys_bf16(dst, krow, rrow, Dk, Dr);
  if (n == Bk) fia_pack_values_bf16(dst + (Dk + Dr) * Bk, vrow, Dv);
}
#endif

/// Rows of a task's score and accumulator buffers: the query tile's rows x heads, rounded up to
/// whole tiles of 16 rows (the matrix engine takes rows 16 at a time; fia_tiles-inl.h).
inline int64_t fia_task_rows(int64_t G) { return (fia_query_tile(G) * G + 15) / 16 * 16; }

/// Floats of one split-KV merge slot row: max, sum, visible count, pad, acc[Dv].
inline int64_t fia_slot_floats(const FiaParams& p) { return 4 + p.value_dim; }

/// The scratch floats one participant needs.
inline int64_t fia_scratch_floats(const FiaParams& p) {
  const int64_t G = p.num_heads / p.num_kv_heads;
  const int64_t M = fia_task_rows(G), Dkt = p.head_dim + p.rope_dim, Dv = p.value_dim;
  // Q, K^T (or packed bf16 pairs), V, V packed as bf16 pairs, S, acc, softmax states (2 floats),
  // visible counts (2 floats each: int64).
  return M * Dkt + Dkt * kFiaKeyTile + kFiaKeyTile * Dv + kFiaKeyTile * Dv / 2 + M * kFiaKeyTile +
         M * Dv + 2 * M + 2 * M;
}

/// Writes row (i, h) of batch bt from its finished state: D5 for an empty row, D8's sink, the
/// normalisation, one rounding to the output dtype (int8: post-quant), the LSE.
inline void fia_finish_row(const FiaParams& p, const FiaPointers& d, const FiaBatch& bt, int64_t i,
                           int64_t h, float* a, const SoftmaxState& st, int64_t cnt) {
  const int64_t Dv = p.value_dim;
  const int64_t ox = bt.out_offset + i * p.o_row + h * p.o_head;
  float lse = kPosInf;
  float row_max = 0.0f, row_sum = 0.0f;  // an empty row's max / sum (FiaArgs::softmax_max)
  if (cnt == 0) {
    for (int64_t x = 0; x < Dv; ++x) a[x] = 0.0f;  // D5: nothing visible
  } else {
    float sum = softmax_final_sum(st);
    if (p.has_sink) sum += exp_scalar(fia_load(d.sink, p.sink_dtype, h) - st.max);  // D8
    const Vec inv = vset1(1.0f / sum);
    for (int64_t x = 0; x < Dv; x += kLanes) vstore(a + x, vmul(vload(a + x), inv));
    lse = softmax_lse(st.max, sum);
    row_max = st.max, row_sum = sum;
  }
  if (p.has_max_sum) {
    const int64_t e = kFiaMaxSumWidth * (bt.lse_offset + i * p.lse_row + h * p.lse_head);
    for (int64_t w = 0; w < kFiaMaxSumWidth; ++w) {
      d.softmax_max[e + w] = row_max;
      d.softmax_sum[e + w] = row_sum;
    }
  }
  if (p.out_dtype == DType::kInt8) {
    int8_t* o = static_cast<int8_t*>(d.out) + ox;
    for (int64_t x = 0; x < Dv; ++x) {
      const int64_t e = p.q2_channel ? h * Dv + x : 0;
      const float s = fia_load(d.quant_scale2, p.q2_dtype, e);
      const float off = p.has_q2_offset ? fia_load(d.quant_offset2, p.q2_dtype, e) : 0.0f;
      o[x] = f32_to_int8_sat(a[x] * s + off);
    }
  } else if (p.out_dtype == DType::kFloat32) {
    float* o = static_cast<float*>(d.out) + ox;
    for (int64_t x = 0; x < Dv; x += kLanes) vstore(o + x, vload(a + x));
  } else {
    uint16_t* o = static_cast<uint16_t*>(d.out) + ox;
    for (int64_t x = 0; x < Dv; x += kLanes) {
      if (p.out_dtype == DType::kFloat16) {
        vstore_fp16(o + x, vload(a + x));
      } else {
        vstore_bf16(o + x, vload(a + x));
      }
    }
  }
  if (p.has_lse) d.lse[bt.lse_offset + i * p.lse_row + h * p.lse_head] = lse;
}

/// One task: batch b, KV head n2, query tile qt, key tiles [t_first, t_last] of those the tile
/// sees (all of them: t_first = 0, t_last = INT64_MAX). `slot` null: the rows are finished and
/// written; else each row's (max, sum, count, acc) goes to slot row m (split-KV, fia_merge).
/// `scratch` is fia_scratch_floats floats, 64-byte aligned. kDot: the AVX512-BF16 score path;
/// Mm: its products on the matrix engine (FiaTiles, whose shape(p) the caller checked and whose
/// Scope it holds), void for none. kv: the key tiles packed by fia_run's packing pass (kDot
/// only; null or a tile outside it: packed here, into the scratch).
template <bool kDot, class Mm = void>
inline void fia_task_body(const FiaParams& p, const FiaPointers& d, float* scratch, int64_t b,
                          int64_t n2, int64_t qt, int64_t t_first, int64_t t_last, float* slot,
                          [[maybe_unused]] const FiaPackedKv* kv) {
  const FiaBatch& bt = p.batches[b];
  const int64_t G = p.num_heads / p.num_kv_heads, Tq = fia_query_tile(G);
  const int64_t i0 = qt * Tq, i1 = std::min(bt.q_rows, i0 + Tq), nq = i1 - i0, M = nq * G;
  const int64_t Dk = p.head_dim, Dr = p.rope_dim, Dkt = Dk + Dr, Dv = p.value_dim;
  const int64_t Mmax = fia_task_rows(G), Bk = kFiaKeyTile, P = p.prefix_len;
  const DType kvt = p.kv_int8 ? DType::kInt8 : p.dtype;
  float* qs = scratch;
  float* kt = qs + Mmax * Dkt;
  float* vs = kt + Dkt * Bk;
  [[maybe_unused]] uint16_t* vp = reinterpret_cast<uint16_t*>(vs + Bk * Dv);  // bf16 P·V's V
  float* s = vs + Bk * Dv + Bk * Dv / 2;
  float* acc = s + Mmax * Bk;
  SoftmaxState* st = reinterpret_cast<SoftmaxState*>(acc + Mmax * Dv);
  int64_t* cnt = reinterpret_cast<int64_t*>(st + Mmax);
  // The bf16 path keeps Q as bf16 rows (unscaled) and K as packed pairs in the same buffers.
  [[maybe_unused]] uint16_t* qb = reinterpret_cast<uint16_t*>(qs);
  [[maybe_unused]] uint16_t* kp = reinterpret_cast<uint16_t*>(kt);
  [[maybe_unused]] const uint16_t* krow[kFiaKeyTile];  // the tile's key / key-rope rows, packed after staging V
  [[maybe_unused]] const uint16_t* rrow[kFiaKeyTile];
  [[maybe_unused]] const uint16_t* vrow[kFiaKeyTile];  // a whole tile's value rows (bf16 P·V)
#ifdef KVFLASH_FIA_BF16_DOT
  const bool pv_dot = kDot && fia_pv_bf16_shape(p);
#else
  constexpr bool pv_dot = false;
#endif
  constexpr bool kTiles = !std::is_void_v<Mm>;
  if constexpr (kTiles) {
    // The rows past M of the last 16-row block: zero queries and accumulators, so the tiles
    // compute zeros there (nobody reads them).
    const int64_t Mt = (M + 15) / 16 * 16;
    std::fill(qb + M * Dkt, qb + Mt * Dkt, uint16_t{0});
    std::fill(acc + M * Dv, acc + Mt * Dv, 0.0f);
  }

  // ---- the query tile: row m = (i - i0) * G + g ----
  for (int64_t ii = 0; ii < nq; ++ii) {
    for (int64_t g = 0; g < G; ++g) {
      const int64_t m = ii * G + g, h = n2 * G + g, i = i0 + ii;
      const int64_t qx = bt.q_offset + i * p.q_row + h * p.q_head;
      const int64_t rx = bt.qr_offset + i * p.qr_row + h * p.qr_head;
      if constexpr (kDot) {
        uint16_t* dst = qb + m * Dkt;
        __builtin_memcpy(dst, static_cast<const uint16_t*>(d.q) + qx, Dk * 2);
        if (Dr) __builtin_memcpy(dst + Dk, static_cast<const uint16_t*>(d.q_rope) + rx, Dr * 2);
      } else {
        float* dst = qs + m * Dkt;  // scaled once here
        for (int64_t x = 0; x < Dk; ++x) dst[x] = fia_load(d.q, p.dtype, qx + x) * p.scale;
        for (int64_t x = 0; x < Dr; ++x) dst[Dk + x] = fia_load(d.q_rope, p.dtype, rx + x) * p.scale;
      }
      st[m] = SoftmaxState{};
      cnt[m] = 0;
      for (int64_t x = 0; x < Dv; ++x) acc[m * Dv + x] = 0.0f;
    }
  }

  // ---- key tiles: only those some row of the tile can see ----
  const int64_t L = bt.kv_len;
  const int64_t jlo = std::max<int64_t>(0, i0 + bt.band_lo);
  const int64_t jhi = std::min<int64_t>(L - 1, (i1 - 1) + bt.band_hi);
  const int64_t t_lo = std::max(jlo / Bk, t_first), t_hi = std::min(jhi / Bk, t_last);
  for (int64_t t = t_lo; jlo <= jhi && t <= t_hi; ++t) {
    const int64_t j0 = t * Bk, n = std::min(Bk, L - j0);
    // The rows ii in [fa, fb) see the whole tile (no mask, 64 positions in their band); `full`:
    // every row does (no per-element masking, one P·V product for all). A row's own band decides
    // (never the rows beside it in the query tile), so chunking a prompt cannot change its bits.
    int64_t fa = nq, fb = nq;
    if (!p.has_mask && n == Bk) {
      fa = std::clamp<int64_t>(j0 + Bk - 1 - bt.band_hi - i0, 0, nq);
      fb = std::clamp<int64_t>(j0 - bt.band_lo - i0 + 1, fa, nq);
    }
    const bool full = fa == 0 && fb == nq;
    // bf16 P·V for the rows that see the whole tile: a partial row sees a range of V, and V outside
    // it must never reach it (0 · NaN), which the fp32 path's per-row range ensures.
    const bool dot_rows = pv_dot && fa < fb;
    const FiaBand band{G, i0, bt.band_lo, bt.band_hi, j0, n};
    bool folded = false;  // the scores' band and fold done with them (FiaTiles::fold_tile)
    // The packed operands: the packing pass's (kv), else this task's scratch (packed below).
    [[maybe_unused]] const bool prepacked =
        kDot && kv != nullptr && t >= kv->first && t < kv->first + kv->count;
    [[maybe_unused]] const uint16_t* kpt = kp;
    [[maybe_unused]] const uint16_t* vpt = vp;
    if (prepacked) {
      kpt = kv->tiles + (t - kv->first) * fia_packed_tile_elems(p);
      vpt = kpt + Dkt * Bk;
    }
    // Stage K (bf16 pairs, or K^T in fp32: d-major, so score rows are vector FMAs) and V rows in
    // fp32 (bf16 P·V: V packed as pairs after the loop); positions past n are 0. Nothing to stage
    // for a prepacked tile every row takes whole with bf16 P·V.
    for (int64_t c = 0; !(prepacked && full && dot_rows) && c < Bk; ++c) {
      const int64_t j = j0 + c;
      if (c >= n) {
        if constexpr (kDot) {
          krow[c] = rrow[c] = nullptr;
        } else {
          for (int64_t x = 0; x < Dkt; ++x) kt[x * Bk + c] = 0.0f;
        }
        for (int64_t x = 0; x < Dv; ++x) vs[c * Dv + x] = 0.0f;
        continue;
      }
      int64_t kx = 0, rx = 0, vx = 0;
      const void* kb = fia_kv_row(p, d, bt, b, FiaKv::kKey, n2, j, &kx);
      const void* rb = Dr ? fia_kv_row(p, d, bt, b, FiaKv::kKeyRope, n2, j, &rx) : nullptr;
      const void* vb = fia_kv_row(p, d, bt, b, FiaKv::kValue, n2, j, &vx);
      const int64_t tok = bt.tok_first + (j - P);
      if (t < t_hi && j + Bk < L) {
        int64_t nx = 0;
        const void* nb = fia_kv_row(p, d, bt, b, FiaKv::kKey, n2, j + Bk, &nx);
        fia_prefetch_row(static_cast<const std::byte*>(nb) + nx * dtype_size(kvt), Dk * dtype_size(kvt));
        nb = fia_kv_row(p, d, bt, b, FiaKv::kValue, n2, j + Bk, &nx);
        fia_prefetch_row(static_cast<const std::byte*>(nb) + nx * dtype_size(kvt), Dv * dtype_size(kvt));
      }
      if constexpr (kDot) {
        krow[c] = static_cast<const uint16_t*>(kb) + kx;
        rrow[c] = Dr ? static_cast<const uint16_t*>(rb) + rx : nullptr;
      } else {
        for (int64_t x = 0; x < Dk; ++x) kt[x * Bk + c] = fia_load(kb, kvt, kx + x);
        if (p.kv_int8) fia_dequant_row(p.k_dq, d.k_scale, d.k_offset, b, n2, tok, kt + c, Dk, Bk);
        for (int64_t x = 0; x < Dr; ++x) kt[(Dk + x) * Bk + c] = fia_load(rb, p.dtype, rx + x);
      }
      if (dot_rows) {
        vrow[c] = static_cast<const uint16_t*>(vb) + vx;
        if (full) continue;  // no row takes the fp32 V
      }
      fia_widen_row(vb, kvt, vx, vs + c * Dv, Dv);
      if (p.kv_int8) fia_dequant_row(p.v_dq, d.v_scale, d.v_offset, b, n2, tok, vs + c * Dv, Dv, 1);
    }
#ifdef KVFLASH_FIA_BF16_DOT
    if constexpr (kDot) {
      if (!prepacked) {
        fia_pack_keys_bf16(kp, krow, rrow, Dk, Dr);
        if (dot_rows) fia_pack_values_bf16(vp, vrow, Dv);
      }
      if constexpr (kTiles) {
        if (full && dot_rows && !p.has_pse) {  // the whole step, 16 rows at a time
          Mm::whole_tile(qb, Dkt, kpt, Dkt / 2, s, vpt, Dv, acc, st, M, p.scale);
          for (int64_t m = 0; m < M; ++m) cnt[m] += Bk;  // full: n == Bk, no mask
          continue;
        }
        if (!p.has_pse && !p.has_mask) {  // scores, band and fold 16 rows at a time
          Mm::fold_tile(qb, Dkt, kpt, Dkt / 2, s, Dv, acc, st, M, p.scale, band);
          folded = true;
        } else {
          Mm::qk(qb, Dkt, kpt, Dkt / 2, s, Bk, M, p.scale);
        }
      } else {
        fia_qk_bf16_tile(qb, Dkt, kpt, Dkt / 2, s, Bk, M, p.scale);
      }
    }
#endif
    if constexpr (!kDot) fia_qk_tile(qs, Dkt, kt, Bk, s, Bk, M, Bk, Dkt);
    for (int64_t ii = 0; ii < nq; ++ii) {
      const int64_t i = i0 + ii;
      // The row's visible range inside the tile, [lo, hi] (empty when lo > hi); the same for its
      // G heads (masks and bands have no head dimension).
      const int64_t lo = band.lo(ii * G), hi = band.hi(ii * G);
      for (int64_t g = 0; g < G; ++g) {
        const int64_t m = ii * G + g;
        float* sr = s + m * Bk;
        if (folded) {  // no pse, no mask
          if (hi >= lo) cnt[m] += hi - lo + 1;
          continue;
        }
        if (!full) {
          for (int64_t c = 0; c < Bk; ++c)
            if (c < lo || c > hi) sr[c] = kNegInf;
        }
        if (p.has_pse) {
          const int64_t px = bt.pse_offset + (n2 * G + g) * p.pse_head + i * p.pse_row;
          for (int64_t c = lo; c <= hi; ++c) {
            const int64_t j = j0 + c, col = j + (j >= P ? bt.col_shift : 0);
            sr[c] += fia_load(d.pse, p.pse_dtype, px + col * p.pse_col);
          }
        }
        if (p.has_mask) {
          const uint8_t* mr = d.mask + bt.mask_offset + i * p.mask_row;
          for (int64_t c = lo; c <= hi; ++c) {
            const int64_t j = j0 + c, col = j + (j >= P ? bt.col_shift : 0);
            if (mr[col * p.mask_col] != 0) {
              sr[c] = kNegInf;
            } else {
              ++cnt[m];
            }
          }
        } else if (hi >= lo) {
          cnt[m] += hi - lo + 1;
        }
        const float alpha = softmax_fold_tile(st[m], sr, Bk);
        softmax_scale_acc(acc + m * Dv, Dv, alpha);
      }
      if (!full && hi >= lo && !(dot_rows && ii >= fa && ii < fb)) {
        // Only the row's range reaches its accumulators (V outside the band is never attended);
        // masked positions inside it are attended with weight 0, as in the reference.
        fia_pv_tile(s + ii * G * Bk + lo, Bk, vs + lo * Dv, Dv, acc + ii * G * Dv, Dv, G,
                    hi - lo + 1, Dv);
      }
    }
#ifdef KVFLASH_FIA_BF16_DOT
    if (dot_rows) {
      // Score rows [fa G, fb G): P rounded to bf16 in place, then P·V.
      float* sd = s + fa * G * Bk;
      float* ad = acc + fa * G * Dv;
      const int64_t Md = (fb - fa) * G;
      fia_round_p_bf16(sd, Md);
      if constexpr (kTiles) {
        Mm::pv(reinterpret_cast<const uint16_t*>(sd), 2 * Bk, vpt, Dv, ad, Md);
      } else {
        fia_pv_bf16_tile(reinterpret_cast<const uint16_t*>(sd), 2 * Bk, vpt, Dv, ad, Md);
      }
      continue;
    }
#endif
    if (full) fia_pv_tile(s, Bk, vs, Dv, acc, Dv, M, Bk, Dv);
  }

  // ---- finish (or hand the state to the merge) ----
  for (int64_t m = 0; m < M; ++m) {
    if (slot) {
      float* r = slot + m * fia_slot_floats(p);
      r[0] = st[m].max, r[1] = st[m].sum, r[2] = static_cast<float>(cnt[m]), r[3] = 0.0f;
      for (int64_t x = 0; x < Dv; x += kLanes) vstore(r + 4 + x, vload(acc + m * Dv + x));
    } else {
      fia_finish_row(p, d, bt, i0 + m / G, n2 * G + m % G, acc + m * Dv, st[m], cnt[m]);
    }
  }
}

#ifdef KVFLASH_FIA_TILES
/// The bf16 task of a level with a matrix engine (its FiaKernels::task_bf16): on the tiles of
/// Tiles where the shape suits them (FiaTiles::shape), holding their configuration for the task,
/// else on vdpbf16ps.
template <class Tiles>
inline void fia_task_tiles(const FiaParams& p, const FiaPointers& d, float* scratch, int64_t b,
                           int64_t n2, int64_t qt, int64_t t_first, int64_t t_last, float* slot,
                           const FiaPackedKv* kv) {
  using Engine = FiaTiles<Tiles>;
  if (!Engine::shape(p)) {
    fia_task_body<true>(p, d, scratch, b, n2, qt, t_first, t_last, slot, kv);
    return;
  }
  typename Engine::Scope tiles;
  fia_task_body<true, Engine>(p, d, scratch, b, n2, qt, t_first, t_last, slot, kv);
}
#endif

/// Merges the `chunks` split-KV slots of task (b, n2, qt) (slot rows of M rows each, in chunk
/// order) and writes its rows: the NaN-keeping max over the parts, each part weighted by
/// softmax_merge_weight (applied even when 0), sums and accumulators added in chunk order.
inline void fia_merge(const FiaParams& p, const FiaPointers& d, float* scratch, int64_t b, int64_t n2,
                      int64_t qt, int64_t chunks, const float* slots) {
  const FiaBatch& bt = p.batches[b];
  const int64_t G = p.num_heads / p.num_kv_heads, Tq = fia_query_tile(G);
  const int64_t i0 = qt * Tq, i1 = std::min(bt.q_rows, i0 + Tq), M = (i1 - i0) * G;
  const int64_t Dv = p.value_dim, W = fia_slot_floats(p);
  float* a = scratch;
  for (int64_t m = 0; m < M; ++m) {
    float mx = kNegInf;
    int64_t cnt = 0;
    for (int64_t c = 0; c < chunks; ++c) {
      const float* r = slots + (c * M + m) * W;
      mx = softmax_max_nan(mx, r[0]);
      cnt += static_cast<int64_t>(r[2]);
    }
    SoftmaxState st;
    st.max = mx;
    for (int64_t x = 0; x < Dv; ++x) a[x] = 0.0f;
    for (int64_t c = 0; c < chunks; ++c) {
      const float* r = slots + (c * M + m) * W;
      const float w = softmax_merge_weight(r[0], mx);
      st.sum += w * r[1];
      const Vec wv = vset1(w);
      for (int64_t x = 0; x < Dv; x += kLanes) vstore(a + x, vfma(wv, vload(r + 4 + x), vload(a + x)));
    }
    fia_finish_row(p, d, bt, i0 + m / G, n2 * G + m % G, a, st, cnt);
  }
}


/// The padding rows (D5): every head of each is written as an empty row (0, int8: the
/// post-quant of 0; LSE +inf). `scratch` holds value_dim floats.
inline void fia_pad_rows(const FiaParams& p, const FiaPointers& d, float* scratch) {
  for (int64_t r = 0; r < p.num_pad_rows; ++r) {
    FiaBatch bt;
    bt.out_offset = p.pad_rows[r].out_offset, bt.lse_offset = p.pad_rows[r].lse_offset;
    for (int64_t h = 0; h < p.num_heads; ++h) fia_finish_row(p, d, bt, 0, h, scratch, SoftmaxState{}, 0);
  }
}
