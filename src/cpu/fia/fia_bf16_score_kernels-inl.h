// FIA kernel body: the AVX512-BF16 QK micro-kernels and key packing.
// Included only by fia_kernel-inl.h, inside the ISA namespace and after the parts before it
// (no include guard, like it: compiled once per ISA, with that unit's flags).
//
// The QK product of the bf16 path, in units that define KVFLASH_FIA_BF16_DOT (avx512 and AMX):
// vdpbf16ps register blocks (fia_qk_bf16_block, fia_qk_bf16_tile) over a key tile packed as
// 32-bit pairs (fia_pack16, fia_pack_keys_bf16), the layout the packing pass
// (fia_task_buffers-inl.h) and the matrix engine (fia_tiles-inl.h) share. Apart from the fp32
// blocks because only that level has them, with an operand layout of their own.

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
#endif  // KVFLASH_FIA_BF16_DOT
