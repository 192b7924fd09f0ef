// AVX-512 helpers of the tile halves (src/cpu/ifa/ifa_tiles-inl.h, src/cpu/sfa/sfa_tiles-inl.h):
// the vector work around the tile kernels of amx_kernels-inl.h (splitting queries and
// probabilities into bf16 pieces, transposing the key-major score tiles) and scores_bf16_32,
// amx::scores of 32 keys on two interleaved accumulators, which calls back between its tile steps
// (a caller may prefetch there).
// Each gives the bits of the amx_kernels-inl.h function it stands for.
//
// No include guard on purpose: include it inside the ISA namespace (or a namespace of it) of a
// translation unit built with the AMX flags (AVX-512BW and AVX512-BF16 included), after
// cpu/amx/amx_kernels.hpp and <immintrin.h> at file scope, as sfa_kernel-inl.h does where
// KVFLASH_SFA_TILES is defined and ifa_chunk_task-inl.h where KVFLASH_IFA_TILES is.

namespace amx = kvflash::cpu::amx;

// The `pieces` (1..amx::kMaxPieces) bf16 pieces of 16 fp32 lanes, amx::split_to_bf16 lane for
// lane: piece q in the low 16 bits of the 32-bit lanes of out[q].
inline void split_lanes_to_bf16(__m512 x, int pieces, __m512i* out) {
  const __m512i u = _mm512_castps_si512(x);
  const __m512i exp_all = _mm512_set1_epi32(0x7f800000);
  const __m512i a = _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff));
  const __mmask16 special = _mm512_cmpge_epu32_mask(a, exp_all);  // inf or NaN
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(a, exp_all);
  __m512 rest = x;
  for (int q = 0; q + 1 < pieces; ++q) {  // truncated leading pieces; the remainder stays exact
    const __m512i r = _mm512_castps_si512(rest);
    out[q] = _mm512_srli_epi32(r, 16);
    rest = _mm512_sub_ps(
        rest, _mm512_castsi512_ps(_mm512_and_si512(r, _mm512_set1_epi32(int32_t(0xffff0000u)))));
  }
  // The last piece rounded to nearest even (core::float_to_bf16 of a finite remainder).
  const __m512i r = _mm512_castps_si512(rest);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(r, 16), _mm512_set1_epi32(1));
  out[pieces - 1] =
      _mm512_srli_epi32(_mm512_add_epi32(r, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
  // inf and NaN: whole into the first piece (NaN made quiet), zero pieces after it.
  for (int q = 1; q < pieces; ++q) out[q] = _mm512_maskz_mov_epi32(~special, out[q]);
  const __m512i first = _mm512_mask_or_epi32(_mm512_srli_epi32(u, 16), nan,
                                             _mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
  out[0] = _mm512_mask_mov_epi32(out[0], special, first);
}

// amx::pack_probs bit for bit, 16 keys at a time: P_i[k] at p + i * p_stride (k < n <= 32) in
// `pieces` pieces, zero for keys k >= n.
inline void pack_probs_avx512(const float* p, ptrdiff_t p_stride, int m, int n, int pieces,
                              uint16_t* out) {
  const __mmask16 lo_keys = n >= 16 ? __mmask16(0xffff) : __mmask16((1u << n) - 1);
  const __mmask16 hi_keys =
      n >= 32 ? __mmask16(0xffff) : __mmask16(n > 16 ? (1u << (n - 16)) - 1 : 0);
  __m512i lo[amx::kMaxPieces], hi[amx::kMaxPieces];
  for (int i = 0; i < m; ++i) {
    const float* row = p + i * p_stride;
    split_lanes_to_bf16(_mm512_maskz_loadu_ps(lo_keys, row), pieces, lo);
    split_lanes_to_bf16(_mm512_maskz_loadu_ps(hi_keys, row + 16), pieces, hi);
    for (int q = 0; q < pieces; ++q) {
      const __m512i both = _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtepi32_epi16(lo[q])),
                                              _mm512_cvtepi32_epi16(hi[q]), 1);
      _mm512_storeu_si512(out + (q * m + i) * amx::kTileK, both);
    }
  }
}

// amx::pack_query_f32 bit for bit: m query rows of fp32 (q_i at q + i * q_stride, d channels) in
// `pieces` pieces, 16 channel pairs at a time. A head's 32 channels of a chunk become 16 pair
// units (32 bits: channel 2r in the low half), scattered to their rows r of the packed tile, m
// units apart; channels past d are +0.0, whose pieces are zero, so every element is written.
// (The scalar packing, run once per kv head and task, held about 6 % of the profile samples of
// a G = 8 decode whose cache sits in L2: docs/perf-log.md, "IFA decode on AMX, round 3".)
inline void pack_query_f32_avx512(const float* q, ptrdiff_t q_stride, int m, int d, int pieces,
                                  uint16_t* out) {
  const int chunks = amx::num_chunks(d);
  const __m512i unit_index =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(m));
  const auto lanes = [](int left) {
    return left >= 16 ? __mmask16(0xffff) : left <= 0 ? __mmask16(0) : __mmask16((1u << left) - 1);
  };
  __m512i lo[amx::kMaxPieces], hi[amx::kMaxPieces];
  for (int i = 0; i < m; ++i) {
    const float* row = q + i * q_stride;
    for (int c = 0; c < chunks; ++c) {
      const int x0 = c * amx::kTileK;
      split_lanes_to_bf16(_mm512_maskz_loadu_ps(lanes(d - x0), row + x0), pieces, lo);
      split_lanes_to_bf16(_mm512_maskz_loadu_ps(lanes(d - x0 - 16), row + x0 + 16), pieces, hi);
      for (int p = 0; p < pieces; ++p) {
        const __m512i units = _mm512_inserti64x4(
            _mm512_castsi256_si512(_mm512_cvtepi32_epi16(lo[p])), _mm512_cvtepi32_epi16(hi[p]), 1);
        auto* tile = reinterpret_cast<int*>(out) +
                     (static_cast<ptrdiff_t>(p) * chunks + c) * amx::kTileRows * m + i;
        _mm512_i32scatter_epi32(tile, unit_index, units, 4);
      }
    }
  }
}

// The 16 x 16 fp32 block at `in` (rows in_stride floats apart) transposed: out row c (c in
// [c0, c1)) at out + c * out_stride holds column c of the block.
inline void transpose16_rows(const float* in, ptrdiff_t in_stride, int64_t c0, int64_t c1,
                             float* out, ptrdiff_t out_stride) {
  __m512 r[16], t[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(in + i * in_stride);
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_shuffle_ps(t[i], t[i + 2], 0x44);
    r[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], 0xee);
    r[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    r[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], 0xee);
  }
  for (int i = 0; i < 16; i += 8) {
    for (int j = 0; j < 4; ++j) {
      t[i + j] = _mm512_shuffle_f32x4(r[i + j], r[i + j + 4], 0x88);
      t[i + j + 4] = _mm512_shuffle_f32x4(r[i + j], r[i + j + 4], 0xdd);
    }
  }
  for (int j = 0; j < 8; ++j) {
    r[j] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0x88);
    r[j + 8] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0xdd);
  }
  for (int64_t c = c0; c < c1; ++c) _mm512_storeu_ps(out + c * out_stride, r[c]);
}

// amx::scores<Tiles, KvType::kBf16> with one query piece for 32 keys at one stride (K_j at
// k + j * stride_bytes) and d a multiple of 32: the two 16-key accumulators share each load of the
// query tile and their chains of tdpbf16ps interleave, so neither waits for the other's latency.
// Each score sums the same products in the same order (chunk by chunk from zero), so the bits are
// amx::scores'. st: 32 rows of amx::kMaxHeads floats.
template <class Tiles, class Between>
inline void scores_bf16_32(const std::byte* k, ptrdiff_t stride_bytes, int d, const uint16_t* qp,
                           int m, float* st, Between between) {
  Tiles::template zero<amx::kTileS0>();
  Tiles::template zero<amx::kTileS1>();
  const std::byte* k1 = k + amx::kTileRows * stride_bytes;
  const ptrdiff_t q_tile = static_cast<ptrdiff_t>(amx::kTileRows) * 2 * m;  // elements
  for (int c = 0; c < d / amx::kTileK; ++c) {
    Tiles::template load<amx::kTileK0>(k + 2 * c * amx::kTileK, stride_bytes);
    Tiles::template load<amx::kTileK1>(k1 + 2 * c * amx::kTileK, stride_bytes);
    Tiles::template load<amx::kTileQ>(qp + c * q_tile, 4 * m);
    Tiles::template dpbf16ps<amx::kTileS0, amx::kTileK0, amx::kTileQ>();
    Tiles::template dpbf16ps<amx::kTileS1, amx::kTileK1, amx::kTileQ>();
    between(c, d / amx::kTileK);
  }
  constexpr ptrdiff_t kRowBytes = amx::kMaxHeads * sizeof(float);
  Tiles::template store<amx::kTileS0>(st, kRowBytes);
  Tiles::template store<amx::kTileS1>(st + amx::kTileRows * amx::kMaxHeads, kRowBytes);
}
