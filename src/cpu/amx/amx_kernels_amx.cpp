// The AMX microkernels on the CPU's tiles. This translation unit is built with the AVX-512,
// AVX512-BF16 and AMX flags (CMakeLists.txt, KVFLASH_AMX_FLAGS); only code reached at
// Isa::kAmx (and the pack_value*_bf16_avx512 functions, at Isa::kAvx512) runs from it; the int8
// and fp16 packing and K staging below need AVX512-BF16 besides.
#include <immintrin.h>

// GCC 12's intrinsic headers trip -W(maybe-)uninitialized on their internal _mm*_undefined
// operands once inlined here (a known false positive); nothing in this unit is uninitialised.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "cpu/amx/amx_kernels.hpp"

namespace kvflash::cpu::amx {

TileScope::TileScope(int m) { HwTiles::configure(decode_palette(m)); }
TileScope::~TileScope() { HwTiles::release(); }

void scores(KvType t, const void* k, ptrdiff_t k_stride, int n, int d, const uint16_t* qpack,
            int m, int qpieces, float* st, ptrdiff_t st_stride) {
  switch (t) {
    case KvType::kBf16:
      return scores<HwTiles, KvType::kBf16>(k, k_stride, n, d, qpack, m, qpieces, st, st_stride);
    case KvType::kFp16:
      return scores<HwTiles, KvType::kFp16>(k, k_stride, n, d, qpack, m, qpieces, st, st_stride);
    case KvType::kInt8:
      return scores<HwTiles, KvType::kInt8>(k, k_stride, n, d, qpack, m, qpieces, st, st_stride);
  }
}

void pv_accumulate(const uint16_t* ppack, int m, int ppieces, const uint16_t* vpack, int vpieces,
                   int d, float* o, ptrdiff_t o_stride) {
  pv_accumulate<HwTiles>(ppack, m, ppieces, vpack, vpieces, d, o, o_stride);
}

namespace {
// The VNNI interleave of two rows' 32-channel chunks: output element 2c + j of a packed row is
// channel c of key 2r + j, the low half of the chunk (indices 32 + c pick the second row) in
// kLo, then the high half in kHi.
alignas(64) constexpr uint16_t kLo[32] = {0,  32, 1,  33, 2,  34, 3,  35, 4,  36, 5,
                                          37, 6,  38, 7,  39, 8,  40, 9,  41, 10, 42,
                                          11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
alignas(64) constexpr uint16_t kHi[32] = {16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21,
                                          53, 22, 54, 23, 55, 24, 56, 25, 57, 26, 58,
                                          27, 59, 28, 60, 29, 61, 30, 62, 31, 63};
}  // namespace

bool pack_value_rows_bf16_avx512(const uint16_t* const* rows, int n, int d, uint16_t* out) {
  const __m512i lo_idx = _mm512_load_si512(kLo);
  const __m512i hi_idx = _mm512_load_si512(kHi);
  const __m512i magnitude = _mm512_set1_epi16(0x7fff);
  const __m512i inf = _mm512_set1_epi16(0x7f80);
  if (n == 2 * kTileRows && d % kTileK == 0) {
    // The whole tile (a decode tile's usual case): plain loads, and the +-inf test as a running
    // minimum of (x & 0x7fff) ^ 0x7f80, which is 0 exactly for +-inf, tested once at the end
    // instead of two compares into masks per row pair (on AVX-512 those share port 5 with the
    // vpermt2w interleave). The general loop below takes 1.6-1.7 times as long for a 32 x 128
    // tile in L1 (docs/perf-log.md, "IFA decode on AMX, round 3").
    __m512i least = _mm512_set1_epi16(-1);
    for (int r = 0; r < kTileRows; ++r) {
      const uint16_t* row_a = rows[2 * r];
      const uint16_t* row_b = rows[2 * r + 1];
      uint16_t* lo_out = out + r * kTileK;
      for (int x0 = 0; x0 < d; x0 += kTileK) {
        const __m512i a = _mm512_loadu_si512(row_a + x0);
        const __m512i b = _mm512_loadu_si512(row_b + x0);
        // 0x6a: (a & b) ^ c.
        least = _mm512_min_epu16(
            least, _mm512_min_epu16(_mm512_ternarylogic_epi32(a, magnitude, inf, 0x6a),
                                    _mm512_ternarylogic_epi32(b, magnitude, inf, 0x6a)));
        uint16_t* dst = lo_out + (x0 / 16) * kTileRows * kTileK;
        _mm512_storeu_si512(dst, _mm512_permutex2var_epi16(a, lo_idx, b));
        _mm512_storeu_si512(dst + kTileRows * kTileK, _mm512_permutex2var_epi16(a, hi_idx, b));
      }
    }
    return _mm512_cmpeq_epi16_mask(least, _mm512_setzero_si512()) == 0;
  }
  __mmask32 infinite = 0;
  const int groups = num_groups(d);
  for (int r = 0; r < kTileRows; ++r) {
    const int k0 = 2 * r, k1 = 2 * r + 1;
    for (int x0 = 0; x0 < d; x0 += kTileK) {
      const int width = d - x0 < kTileK ? d - x0 : kTileK;
      const __mmask32 mask = width == kTileK ? ~__mmask32{0} : (__mmask32{1} << width) - 1;
      const __m512i a =
          k0 < n ? _mm512_maskz_loadu_epi16(mask, rows[k0] + x0) : _mm512_setzero_si512();
      const __m512i b =
          k1 < n ? _mm512_maskz_loadu_epi16(mask, rows[k1] + x0) : _mm512_setzero_si512();
      infinite |= _mm512_cmpeq_epi16_mask(_mm512_and_si512(a, magnitude), inf) |
                  _mm512_cmpeq_epi16_mask(_mm512_and_si512(b, magnitude), inf);
      const int g = x0 / 16;
      _mm512_storeu_si512(out + (g * kTileRows + r) * kTileK,
                          _mm512_permutex2var_epi16(a, lo_idx, b));
      if (g + 1 < groups) {
        _mm512_storeu_si512(out + ((g + 1) * kTileRows + r) * kTileK,
                            _mm512_permutex2var_epi16(a, hi_idx, b));
      }
    }
  }
  return infinite == 0;
}

namespace {

// The AVX-512 helpers (split_lanes_to_bf16) in a namespace of this file's own.
namespace vec {
#include "cpu/amx/amx_avx512-inl.h"
}  // namespace vec

__mmask32 first_lanes(int width) {
  return width >= kTileK ? ~__mmask32{0} : (__mmask32{1} << width) - 1;
}

// Channels [x0, x0 + 32) of an int8 row (`mask`: those below d) as 32 bf16 (exact: an int8 value
// has at most 8 significant bits, so the rounding conversion changes nothing). Never infinite.
struct WidenInt8 {
  static constexpr int kPieces = 1;
  __mmask32 operator()(const int8_t* row, int x0, __mmask32 mask, __m512i* out) const {
    const __m256i v = _mm256_maskz_loadu_epi8(mask, row + x0);
    const __m512 lo = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_castsi256_si128(v)));
    const __m512 hi = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_extracti128_si256(v, 1)));
    out[0] = (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
    return 0;
  }
};

// Channels [x0, x0 + 32) of an fp16 row as their 2 bf16 pieces (split_to_bf16 of the exact fp32
// value, lane for lane: split_lanes_to_bf16); returns the lanes that hold +-inf.
struct SplitFp16 {
  static constexpr int kPieces = 2;
  __mmask32 operator()(const uint16_t* row, int x0, __mmask32 mask, __m512i* out) const {
    alignas(64) static constexpr uint16_t kLowHalves[32] = {
        0,  2,  4,  6,  8,  10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30,
        32, 34, 36, 38, 40, 42, 44, 46, 48, 50, 52, 54, 56, 58, 60, 62};
    const __m512i v = _mm512_maskz_loadu_epi16(mask, row + x0);
    __m512i lo[2], hi[2];
    vec::split_lanes_to_bf16(_mm512_cvtph_ps(_mm512_castsi512_si256(v)), 2, lo);
    vec::split_lanes_to_bf16(_mm512_cvtph_ps(_mm512_extracti64x4_epi64(v, 1)), 2, hi);
    const __m512i halves = _mm512_load_si512(kLowHalves);
    for (int p = 0; p < 2; ++p) out[p] = _mm512_permutex2var_epi16(lo[p], halves, hi[p]);
    return _mm512_cmpeq_epi16_mask(_mm512_and_si512(v, _mm512_set1_epi16(0x7fff)),
                                   _mm512_set1_epi16(0x7c00));
  }
};

// pack_value_rows<T> with `convert` (WidenInt8, SplitFp16) turning 32 channels of a row into
// their pieces; the interleave (kLo, kHi) is pack_value_rows_bf16_avx512's general loop, piece by
// piece.
template <class Convert, class T>
bool pack_converted_rows(const T* const* rows, int n, int d, uint16_t* out, Convert convert) {
  constexpr int kPieces = Convert::kPieces;
  const __m512i lo_idx = _mm512_load_si512(kLo);
  const __m512i hi_idx = _mm512_load_si512(kHi);
  const int groups = num_groups(d);
  const ptrdiff_t plane = static_cast<ptrdiff_t>(groups) * kTileRows * kTileK;
  __mmask32 infinite = 0;
  __m512i a[kPieces], b[kPieces];
  for (int r = 0; r < kTileRows; ++r) {
    const int k0 = 2 * r, k1 = 2 * r + 1;
    for (int x0 = 0; x0 < d; x0 += kTileK) {
      const __mmask32 mask = first_lanes(d - x0);
      for (int p = 0; p < kPieces; ++p) a[p] = b[p] = _mm512_setzero_si512();
      if (k0 < n) infinite |= convert(rows[k0], x0, mask, a);
      if (k1 < n) infinite |= convert(rows[k1], x0, mask, b);
      const int g = x0 / 16;
      for (int p = 0; p < kPieces; ++p) {
        uint16_t* dst = out + p * plane + (g * kTileRows + r) * kTileK;
        _mm512_storeu_si512(dst, _mm512_permutex2var_epi16(a[p], lo_idx, b[p]));
        if (g + 1 < groups) {
          _mm512_storeu_si512(dst + kTileRows * kTileK,
                              _mm512_permutex2var_epi16(a[p], hi_idx, b[p]));
        }
      }
    }
  }
  return infinite == 0;
}

}  // namespace

bool pack_value_rows_int8_avx512(const int8_t* const* rows, int n, int d, uint16_t* out) {
  return pack_converted_rows(rows, n, d, out, WidenInt8{});
}

bool pack_value_rows_fp16_avx512(const uint16_t* const* rows, int n, int d, uint16_t* out) {
  return pack_converted_rows(rows, n, d, out, SplitFp16{});
}

void widen_rows_int8_avx512(const int8_t* const* rows, int n, int d, uint16_t* out,
                            ptrdiff_t out_stride) {
  __m512i piece[1];
  for (int k = 0; k < n; ++k) {
    for (int x0 = 0; x0 < d; x0 += kTileK) {
      const __mmask32 mask = first_lanes(d - x0);
      WidenInt8{}(rows[k], x0, mask, piece);
      _mm512_mask_storeu_epi16(out + k * out_stride + x0, mask, piece[0]);
    }
  }
}

void split_rows_fp16_avx512(const uint16_t* const* rows, int n, int d, uint16_t* hi, uint16_t* lo,
                            ptrdiff_t out_stride) {
  __m512i piece[2];
  for (int k = 0; k < n; ++k) {
    for (int x0 = 0; x0 < d; x0 += kTileK) {
      const __mmask32 mask = first_lanes(d - x0);
      SplitFp16{}(rows[k], x0, mask, piece);
      _mm512_mask_storeu_epi16(hi + k * out_stride + x0, mask, piece[0]);
      _mm512_mask_storeu_epi16(lo + k * out_stride + x0, mask, piece[1]);
    }
  }
}

bool pack_values_bf16_avx512(const uint16_t* v, ptrdiff_t v_stride, int n, int d, uint16_t* out) {
  const uint16_t* rows[2 * kTileRows];
  for (int k = 0; k < n; ++k) rows[k] = v + k * v_stride;
  return pack_value_rows_bf16_avx512(rows, n, d, out);
}

float peak_loop(int64_t iters) {
  TileConfig c;
  for (int t = 0; t < kNumTiles; ++t) {
    c.rows[t] = kTileRows;
    c.colsb[t] = kTileRowBytes;
  }
  alignas(64) uint16_t ones[kTileRows * kTileK];
  for (uint16_t& x : ones) x = 0x3f80;  // bf16 1.0: the sums stay finite (32 a step)
  alignas(64) float out[kTileRows * 16];
  BasicTileScope<HwTiles> scope(c);
  HwTiles::zero<0>();
  HwTiles::zero<1>();
  HwTiles::zero<2>();
  HwTiles::zero<3>();
  HwTiles::load<4>(ones, kTileRowBytes);
  HwTiles::load<5>(ones, kTileRowBytes);
  HwTiles::load<6>(ones, kTileRowBytes);
  HwTiles::load<7>(ones, kTileRowBytes);
  // Four independent accumulators, each A and B tile used twice: the dependency chains of one
  // accumulator do not limit the issue rate.
  for (int64_t i = 0; i < iters; ++i) {
    HwTiles::dpbf16ps<0, 4, 6>();
    HwTiles::dpbf16ps<1, 4, 7>();
    HwTiles::dpbf16ps<2, 5, 6>();
    HwTiles::dpbf16ps<3, 5, 7>();
  }
  float sum = 0.0f;
  HwTiles::store<0>(out, kTileRowBytes);
  sum += out[0];
  HwTiles::store<3>(out, kTileRowBytes);
  sum += out[255];
  return sum;
}

}  // namespace kvflash::cpu::amx
