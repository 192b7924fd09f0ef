// The AMX microkernels of decode attention, written once against a tile-operations type (see
// amx_tile.hpp): src/cpu/amx/amx_kernels_amx.cpp instantiates them on the CPU's tiles, the tests
// on a software model of the tiles. Pure functions over caller memory: no allocation (staging
// buffers live on the stack, 3 KiB), no state beyond the tile configuration the caller loaded
// (decode_palette(m) through a tile scope).
//
// Layouts (bf16 elements as uint16_t bit patterns; "zero" means +0.0 bits):
//
// Packed query (the B operand of the scores, VNNI pairs): for piece p, channel chunk c (32
// channels), pair row r (0..15), head i (0..m-1), j (0, 1):
//   qpack[((p * chunks + c) * 16 + r) * 2m + 2i + j] = piece p of q_i[32c + 2r + j] (zero past d),
//   chunks = ceil(d / 32); query_pack_size() elements.
// Packed probabilities (the A operand of P·V): for piece p, head i, key k (0..31):
//   ppack[(p * m + i) * 32 + k] = piece p of P_i[k] (zero for k >= n).
// Packed values (the B operand of P·V, VNNI pairs): for piece p, channel group g (16 channels),
// pair row r (0..15), channel c (0..15), j (0, 1):
//   vpack[((p * groups + g) * 16 + r) * 32 + 2c + j] = piece p of V[2r + j][16g + c]
//   (zero for keys >= n or channels >= d), groups = ceil(d / 16); value_pack_size() elements.
#pragma once

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "core/half.hpp"
#include "cpu/amx/amx_split.hpp"
#include "cpu/amx/amx_tile.hpp"

namespace kvflash::cpu::amx {

/// Element types of a K or V row in the cache.
enum class KvType { kBf16, kFp16, kInt8 };

/// The bf16 pieces a cache element needs to be exact: fp16 2 (11 significand bits), bf16 and
/// int8 one.
constexpr int kv_pieces(KvType t) { return t == KvType::kFp16 ? 2 : 1; }

constexpr int num_chunks(int d) { return (d + kTileK - 1) / kTileK; }
constexpr int num_groups(int d) { return (d + 15) / 16; }

/// Elements of a packed query of m heads, d channels, `pieces` pieces.
constexpr size_t query_pack_size(int m, int d, int pieces) {
  return static_cast<size_t>(pieces) * num_chunks(d) * kTileRows * 2 * m;
}
/// Elements of packed probabilities of m heads (32 keys).
constexpr size_t prob_pack_size(int m, int pieces) {
  return static_cast<size_t>(pieces) * m * kTileK;
}
/// Elements of packed values of d channels (32 keys) for element type t.
constexpr size_t value_pack_size(int d, KvType t) {
  return static_cast<size_t>(kv_pieces(t)) * num_groups(d) * kTileRows * kTileK;
}

/// Element x of a cache row as fp32 (exact for all three types).
template <KvType T>
inline float kv_to_float(const void* row, int x) {
  if constexpr (T == KvType::kInt8) {
    return static_cast<float>(static_cast<const int8_t*>(row)[x]);
  } else {
    const uint16_t h = static_cast<const uint16_t*>(row)[x];
    return T == KvType::kFp16 ? core::fp16_to_float(h) : core::bf16_to_float(h);
  }
}

/// The bytes of one element of type t.
constexpr ptrdiff_t kv_bytes(KvType t) { return t == KvType::kInt8 ? 1 : 2; }

// ---- packing (plain C++, no tiles) ------------------------------------------------------------

/// Packs m query rows of fp32 (q_i at q + i * q_stride, d channels) in `pieces` pieces.
inline void pack_query_f32(const float* q, ptrdiff_t q_stride, int m, int d, int pieces,
                           uint16_t* out) {
  const int chunks = num_chunks(d);
  std::memset(out, 0, query_pack_size(m, d, pieces) * sizeof(uint16_t));
  uint16_t piece[kMaxPieces];
  for (int i = 0; i < m; ++i) {
    for (int x = 0; x < d; ++x) {
      split_to_bf16(q[i * q_stride + x], pieces, piece);
      const int c = x / kTileK, r = (x % kTileK) / 2, j = x % 2;
      for (int p = 0; p < pieces; ++p) {
        out[((static_cast<size_t>(p) * chunks + c) * kTileRows + r) * 2 * m + 2 * i + j] = piece[p];
      }
    }
  }
}

/// Packs m query rows of a cache element type (bf16: 1 piece, fp16: 2, int8: 1; all exact).
template <KvType T>
inline void pack_query(const void* q, ptrdiff_t q_stride, int m, int d, uint16_t* out) {
  const int pieces = kv_pieces(T);
  const int chunks = num_chunks(d);
  std::memset(out, 0, query_pack_size(m, d, pieces) * sizeof(uint16_t));
  uint16_t piece[kMaxPieces];
  const auto* base = static_cast<const std::byte*>(q);
  for (int i = 0; i < m; ++i) {
    const std::byte* row = base + i * q_stride * kv_bytes(T);
    for (int x = 0; x < d; ++x) {
      split_to_bf16(kv_to_float<T>(row, x), pieces, piece);
      if constexpr (T == KvType::kBf16) std::memcpy(piece, row + 2 * x, 2);  // the bits as stored
      const int c = x / kTileK, r = (x % kTileK) / 2, j = x % 2;
      for (int p = 0; p < pieces; ++p) {
        out[((static_cast<size_t>(p) * chunks + c) * kTileRows + r) * 2 * m + 2 * i + j] = piece[p];
      }
    }
  }
}

/// Packs probabilities of m heads over n <= 32 keys (P_i at p + i * p_stride, fp32).
inline void pack_probs(const float* p, ptrdiff_t p_stride, int m, int n, int pieces,
                       uint16_t* out) {
  std::memset(out, 0, prob_pack_size(m, pieces) * sizeof(uint16_t));
  uint16_t piece[kMaxPieces];
  for (int i = 0; i < m; ++i) {
    for (int k = 0; k < n; ++k) {
      split_to_bf16(p[i * p_stride + k], pieces, piece);
      for (int q = 0; q < pieces; ++q) out[(q * m + i) * kTileK + k] = piece[q];
    }
  }
}

/// Packs n <= 32 value rows given by address (row k at rows[k]; channel x at element x * x_stride
/// of T from it, d channels) in kv_pieces(T) pieces: the rows of a paged cache need not be
/// equally spaced. Scalar reference layout; pack_value_rows_{bf16,int8,fp16}_avx512
/// (amx_kernels.hpp) are the same layout for rows of contiguous channels with vector shuffles.
/// Returns false when a value is +-inf: such a block must not go through pv_accumulate with more
/// than one probability piece (inf times a zero piece is NaN where fp64 has +-inf), so the caller
/// runs that block's P·V on fp32 FMAs. NaN values need nothing: they make the same outputs NaN
/// either way.
template <KvType T>
inline bool pack_value_rows(const void* const* rows, ptrdiff_t x_stride, int n, int d,
                            uint16_t* out) {
  bool finite = true;
  const int pieces = kv_pieces(T);
  const int groups = num_groups(d);
  std::memset(out, 0, value_pack_size(d, T) * sizeof(uint16_t));
  uint16_t piece[kMaxPieces];
  for (int k = 0; k < n; ++k) {
    const auto* row = static_cast<const std::byte*>(rows[k]);
    for (int x = 0; x < d; ++x) {
      const std::byte* at = row + x * x_stride * kv_bytes(T);
      const float value = kv_to_float<T>(at, 0);
      finite = finite && !std::isinf(value);
      split_to_bf16(value, pieces, piece);
      if constexpr (T == KvType::kBf16) std::memcpy(piece, at, 2);  // the bits as stored
      const int g = x / 16, c = x % 16, r = k / 2, j = k % 2;
      for (int p = 0; p < pieces; ++p) {
        out[((static_cast<size_t>(p) * groups + g) * kTileRows + r) * kTileK + 2 * c + j] =
            piece[p];
      }
    }
  }
  return finite;
}

/// pack_value_rows of n <= 32 equally spaced rows with contiguous channels (row k at
/// v + k * v_stride elements of T).
template <KvType T>
inline bool pack_values(const void* v, ptrdiff_t v_stride, int n, int d, uint16_t* out) {
  const void* rows[2 * kTileRows];
  for (int k = 0; k < n; ++k) {
    rows[k] = static_cast<const std::byte*>(v) + k * v_stride * kv_bytes(T);
  }
  return pack_value_rows<T>(rows, 1, n, d, out);
}

// ---- tile kernels ---------------------------------------------------------------------------

namespace detail {

// Copies a block of `rows` keys x channels [x0, x0 + 32) of piece `piece` into a 16 x 32 bf16
// staging tile, zero past the rows and past d (exact: the zeros add +0.0 products).
template <KvType T>
inline void stage_k(const std::byte* k, ptrdiff_t k_stride_bytes, int rows, int x0, int d,
                    int piece, uint16_t* stage) {
  std::memset(stage, 0, kTileRows * kTileRowBytes);
  const int width = d - x0 < kTileK ? d - x0 : kTileK;
  uint16_t pieces[kMaxPieces];
  for (int r = 0; r < rows; ++r) {
    const std::byte* row = k + r * k_stride_bytes;
    for (int x = 0; x < width; ++x) {
      if constexpr (T == KvType::kBf16) {
        std::memcpy(&stage[r * kTileK + x], row + 2 * (x0 + x), 2);
      } else {
        split_to_bf16(kv_to_float<T>(row, x0 + x), kv_pieces(T), pieces);
        stage[r * kTileK + x] = pieces[piece];
      }
    }
  }
}

// Loads the A tile `t` with keys [0, rows) x chunk `c` of K piece `piece`: straight from the
// cache when the rows are bf16, all 16 are attended and the chunk is whole; else staged.
template <class Ops, int t, KvType T>
inline void load_k(const std::byte* k, ptrdiff_t k_stride_bytes, int rows, int c, int d, int piece,
                   uint16_t* stage) {
  const int x0 = c * kTileK;
  if (T == KvType::kBf16 && rows == kTileRows && x0 + kTileK <= d) {
    Ops::template load<t>(k + 2 * x0, k_stride_bytes);
  } else {
    stage_k<T>(k, k_stride_bytes, rows, x0, d, piece, stage);
    Ops::template load<t>(stage, kTileRowBytes);
  }
}

// Stores rows [0, rows) of a block's scores: the leading-piece sums (tile kTileS0) plus, when
// there are other pieces, their sums (kTileS1). A leading sum that is inf or NaN is kept alone:
// an inf element times a zero piece of the other operand (the pieces after the first are 0 for
// any value with fewer significand bits) is NaN in the second sum, where fp64 has +-inf.
template <class Ops>
inline void store_scores(float* st, ptrdiff_t st_stride, int rows, int m, bool rest,
                         float* stage_hi, float* stage_rest) {
  if (!rest && rows == kTileRows) {
    Ops::template store<kTileS0>(st, st_stride * static_cast<ptrdiff_t>(sizeof(float)));
    return;
  }
  Ops::template store<kTileS0>(stage_hi, kTileRowBytes);
  if (!rest) {
    for (int r = 0; r < rows; ++r) std::memcpy(st + r * st_stride, stage_hi + r * 16, 4 * m);
    return;
  }
  Ops::template store<kTileS1>(stage_rest, kTileRowBytes);
  for (int r = 0; r < rows; ++r) {
    for (int i = 0; i < m; ++i) {
      const float hi = stage_hi[r * 16 + i];
      const uint32_t a = std::bit_cast<uint32_t>(hi) & 0x7fffffffu;
      st[r * st_stride + i] = a >= 0x7f800000u ? hi : hi + stage_rest[r * 16 + i];
    }
  }
}

}  // namespace detail

namespace detail {

// The K operand of scores: rows of element type T from the cache (k_stride_bytes apart), split
// into kv_pieces(T) bf16 pieces as each 16-key block is loaded (load_k).
template <KvType T>
struct CacheRows {
  static constexpr int kPieces = kv_pieces(T);
  const std::byte* k;
  ptrdiff_t stride_bytes;
  template <class Ops, int t>
  void load(int j0, int rows, int c, int d, int piece, uint16_t* stage) const {
    load_k<Ops, t, T>(k + j0 * stride_bytes, stride_bytes, rows, c, d, piece, stage);
  }
};

// The K operand of scores already split: piece p of every row in plane[p] (bf16 rows
// stride_bytes apart), loaded straight from the planes.
struct SplitRows {
  static constexpr int kPieces = 2;
  const std::byte* plane[2];
  ptrdiff_t stride_bytes;
  template <class Ops, int t>
  void load(int j0, int rows, int c, int d, int piece, uint16_t* stage) const {
    load_k<Ops, t, KvType::kBf16>(plane[piece] + j0 * stride_bytes, stride_bytes, rows, c, d, 0,
                                  stage);
  }
};

// scores (below) for the K rows of `rows` (CacheRows or SplitRows).
template <class Ops, class Rows>
void scores_of(const Rows& krows, int n, int d, const uint16_t* qpack, int m, int qpieces,
               float* st, ptrdiff_t st_stride) {
  alignas(64) uint16_t stage0[kTileRows * kTileK];
  alignas(64) uint16_t stage1[kTileRows * kTileK];
  alignas(64) float stage_hi[kTileRows * 16];
  alignas(64) float stage_rest[kTileRows * 16];
  constexpr bool kSplitK = Rows::kPieces == 2;
  const bool rest = kSplitK || qpieces > 1;
  const int chunks = num_chunks(d);
  const ptrdiff_t q_tile = static_cast<ptrdiff_t>(kTileRows) * 2 * m;  // elements per Q tile
  const ptrdiff_t q_row = 4 * m;                                       // bytes per Q tile row
  for (int j0 = 0; j0 < n; j0 += kTileRows) {
    const int rows = n - j0 < kTileRows ? n - j0 : kTileRows;
    Ops::template zero<kTileS0>();
    if (rest) Ops::template zero<kTileS1>();
    for (int c = 0; c < chunks; ++c) {
      krows.template load<Ops, kTileK0>(j0, rows, c, d, 0, stage0);
      if constexpr (kSplitK) krows.template load<Ops, kTileK1>(j0, rows, c, d, 1, stage1);
      for (int p = 0; p < qpieces; ++p) {
        Ops::template load<kTileQ>(qpack + (p * chunks + c) * q_tile, q_row);
        if (p == 0) {
          Ops::template dpbf16ps<kTileS0, kTileK0, kTileQ>();
        } else {
          Ops::template dpbf16ps<kTileS1, kTileK0, kTileQ>();
        }
        if constexpr (kSplitK) Ops::template dpbf16ps<kTileS1, kTileK1, kTileQ>();
      }
    }
    store_scores<Ops>(st + j0 * st_stride, st_stride, rows, m, rest, stage_hi, stage_rest);
  }
}

}  // namespace detail

/// Scores of m <= 16 query heads against n keys, key-major:
///   st[j * st_stride + i] = sum over channels x < d, query pieces p, and K pieces of
///                           K_j[x] * piece p of q_i[x]        (j < n, i < m),
/// K_j at k + j * k_stride elements of T, straight from the cache (the A operand, no re-layout)
/// when T is bf16; fp16 rows are split into 2 bf16 pieces and int8 rows widened to bf16 in a
/// staging tile (both exact). qpack: pack_query_f32 / pack_query of the same m and d with
/// `qpieces` pieces. Needs decode_palette(m) loaded; reads exactly the n rows' d channels.
/// The product of the two leading pieces accumulates in kTileS0, every other product in
/// kTileS1, added at the end unless the first is inf or NaN (non-finite inputs then give what
/// fp64 gives; see detail::store_scores). Each element sums its products in the same order
/// (chunk, then query piece, then K piece) whatever n, m, or the key's place, so a key's score
/// bits do not depend on how keys and heads are blocked (given tdpbf16ps itself is independent
/// of the tile shape). Cost per 16 keys: chunks x qpieces x kv_pieces(T) tdpbf16ps.
template <class Ops, KvType T>
void scores(const void* k, ptrdiff_t k_stride, int n, int d, const uint16_t* qpack, int m,
            int qpieces, float* st, ptrdiff_t st_stride) {
  const detail::CacheRows<T> rows{static_cast<const std::byte*>(k), k_stride * kv_bytes(T)};
  detail::scores_of<Ops>(rows, n, d, qpack, m, qpieces, st, st_stride);
}

/// scores<Ops, KvType::kFp16> of fp16 rows split beforehand (split_to_bf16 with 2 pieces):
/// piece 0 of K_j at hi + j * k_stride, piece 1 at lo + j * k_stride (bf16 elements). The same
/// bits as scores<Ops, KvType::kFp16> of the rows they were split from; a caller that scores the
/// same keys against several passes of heads splits them once instead of once a pass.
template <class Ops>
void scores_split(const uint16_t* hi, const uint16_t* lo, ptrdiff_t k_stride, int n, int d,
                  const uint16_t* qpack, int m, int qpieces, float* st, ptrdiff_t st_stride) {
  const detail::SplitRows rows{
      {reinterpret_cast<const std::byte*>(hi), reinterpret_cast<const std::byte*>(lo)},
      k_stride * 2};
  detail::scores_of<Ops>(rows, n, d, qpack, m, qpieces, st, st_stride);
}

/// P·V for one block of 32 keys: o[i * o_stride + x] += sum over keys k < 32, probability
/// pieces and value pieces of piece(P_i[k]) * piece(V[k][x]), for heads i < m and channels
/// x < 16 * num_groups(d) (o rows must have that many fp32 columns; those past d receive
/// +0.0 products). ppack: pack_probs of m heads with `ppieces` pieces; vpack: pack_value_rows with
/// `vpieces` pieces (kv_pieces of the value type). Needs decode_palette(m) loaded.
template <class Ops>
void pv_accumulate(const uint16_t* ppack, int m, int ppieces, const uint16_t* vpack, int vpieces,
                   int d, float* o, ptrdiff_t o_stride) {
  const int groups = num_groups(d);
  const ptrdiff_t o_bytes = o_stride * static_cast<ptrdiff_t>(sizeof(float));
  for (int g = 0; g < groups; ++g) {
    Ops::template load<kTileO>(o + 16 * g, o_bytes);
    for (int vp = 0; vp < vpieces; ++vp) {
      Ops::template load<kTileV>(
          vpack + (static_cast<ptrdiff_t>(vp) * groups + g) * kTileRows * kTileK, kTileRowBytes);
      for (int pp = 0; pp < ppieces; ++pp) {
        Ops::template load<kTileP>(ppack + static_cast<ptrdiff_t>(pp) * m * kTileK, kTileRowBytes);
        Ops::template dpbf16ps<kTileO, kTileP, kTileV>();
      }
    }
    Ops::template store<kTileO>(o + 16 * g, o_bytes);
  }
}

/// pv_accumulate of m = kMaxHeads heads over `blocks` consecutive blocks of 32 keys (block k's
/// probabilities at ppack + k * prob_pack_size(kMaxHeads, kMaxPieces), kMaxPieces pieces; its bf16
/// values, one piece, at vpack + k * value_pack_size(d, KvType::kBf16)), d a multiple of 32.
/// Needs decode_palette(kMaxHeads) loaded: at that head count every tile has the shape 16 x 64
/// bytes, so two channel groups accumulate at once (kTileO, and kTileS0 with its value operand in
/// kTileK0) and the three probability pieces stay loaded (kTileP, kTileS1, kTileQ) for both: the
/// two chains of tdpbf16ps interleave, and each output tile is loaded and stored once for all
/// blocks instead of once a block. Every element sums the same products in the same order as
/// pv_accumulate block after block (block, then piece), so the bits are the same.
template <class Ops>
void pv_accumulate_heads16(const uint16_t* ppack, int blocks, const uint16_t* vpack, int d,
                           float* o, ptrdiff_t o_stride) {
  static_assert(kMaxPieces == 3, "one probability tile per piece");
  const int groups = num_groups(d);
  const ptrdiff_t pblock = static_cast<ptrdiff_t>(prob_pack_size(kMaxHeads, kMaxPieces));
  const ptrdiff_t vblock = static_cast<ptrdiff_t>(value_pack_size(d, KvType::kBf16));
  const ptrdiff_t piece = static_cast<ptrdiff_t>(kMaxHeads) * kTileK;
  const ptrdiff_t vgroup = static_cast<ptrdiff_t>(kTileRows) * kTileK;
  const ptrdiff_t o_bytes = o_stride * static_cast<ptrdiff_t>(sizeof(float));
  for (int g = 0; g < groups; g += 2) {
    Ops::template load<kTileO>(o + 16 * g, o_bytes);
    Ops::template load<kTileS0>(o + 16 * (g + 1), o_bytes);
    for (int k = 0; k < blocks; ++k) {
      const uint16_t* p = ppack + k * pblock;
      const uint16_t* v = vpack + k * vblock + g * vgroup;
      Ops::template load<kTileV>(v, kTileRowBytes);
      Ops::template load<kTileK0>(v + vgroup, kTileRowBytes);
      Ops::template load<kTileP>(p, kTileRowBytes);
      Ops::template load<kTileS1>(p + piece, kTileRowBytes);
      Ops::template load<kTileQ>(p + 2 * piece, kTileRowBytes);
      Ops::template dpbf16ps<kTileO, kTileP, kTileV>();
      Ops::template dpbf16ps<kTileS0, kTileP, kTileK0>();
      Ops::template dpbf16ps<kTileO, kTileS1, kTileV>();
      Ops::template dpbf16ps<kTileS0, kTileS1, kTileK0>();
      Ops::template dpbf16ps<kTileO, kTileQ, kTileV>();
      Ops::template dpbf16ps<kTileS0, kTileQ, kTileK0>();
    }
    Ops::template store<kTileO>(o + 16 * g, o_bytes);
    Ops::template store<kTileS0>(o + 16 * (g + 1), o_bytes);
  }
}

}  // namespace kvflash::cpu::amx
