// The LightningIndexer scoring body, written once against a vector-traits type and compiled per
// ISA (li_kernel_{scalar,avx2,avx512}.cpp include it inside their own namespace with their flags).
//
// score_rows_* compute, for query rows of one batch and each of their valid keys j in [j0, j1),
// the order key (li_order_key; its first radix digit counted into the scratch histogram as it is
// written) of
//   score[j] = sum_h w[h] * relu(q[h] . k[j])
// in one pass over the key rows: heads sit in vector lanes (head vector v holds heads
// v*kLanes .. v*kLanes + kLanes - 1), a register block of kHeadBlock head vectors x kKeyBlock keys
// accumulates over d, then ReLU, the weight and the head sum are applied to the accumulators
// before the next block of keys is read. The arithmetic, fixed for a given ISA level:
//   1. dot[h][j]: d = 0, 1, ..., 127 in order, acc = fma(q[h][d], k[j][d], acc) in fp32. fp16 and
//      bf16 products are exact in fp32, so every step rounds once (the same bits on every ISA).
//      avx512bf16 with bf16 inputs (KVFLASH_LI_BF16_DOT): vdpbf16ps adds the pair d = 2p, 2p+1
//      per step, p = 0..63 (inputs and results below 2^-126 flushed to zero).
//   2. relu(dot) keeping NaN (x86 max returns its second operand when one is NaN: vmax(0, x)),
//      padding lanes of the last head vector forced to 0.
//   3. lane-wise acc = fma(w[v], relu, acc) over head vectors v = 0, 1, ... in order (one rounding
//      per head; the scalar build, without FMA hardware, rounds the product too), then the ISA's
//      fixed horizontal tree (vreduce_add).
// Each key's arithmetic is the same whichever block position or tail path handles it, so equal
// key rows give equal scores (ties resolve by index) and the bits depend on neither the thread
// count nor the batch composition.
//
// The matrix-engine scorer (AMX tiles of 16 keys x 16 heads: li_tiles-inl.h, when
// KVFLASH_LI_TILES is defined) replaces score_rows_bf16 for the amx level, with the same inputs and
// the same order keys out; the selection (li_select_topk) and the driver (li_kernel.cpp) stay as
// they are.
//
// Include it only from a per-ISA translation unit, inside that ISA's namespace
// (kvflash::cpu::<isa>) after simd_<isa>.h and simd_math-inl.h, and after <cstring> and
// "cpu/li/li_kernel.hpp" at file scope.

namespace li_body {

using kvflash::DType;
using kvflash::cpu::kLiHeadDim;
using kvflash::cpu::kLiKeyBlock;
using kvflash::cpu::LiData;
using kvflash::cpu::LiParams;
using kvflash::cpu::LiRowRef;
using kvflash::cpu::LiScratch;

constexpr int64_t kD = kLiHeadDim;
// Register block: kHeadBlock head vectors x kKeyBlock keys of accumulators. AVX-512 (32 registers)
// holds 4 x 4 plus the operands; AVX2's 16 registers hold 4 x 2; the scalar build uses the same
// shape as AVX2. The blocking never changes a result (each (head, key) keeps its own order).
constexpr int kHeadBlock = 4;
constexpr int kKeyBlock = kLanes >= 16 ? 4 : 2;
static_assert(kKeyBlock <= kLiKeyBlock);

inline int64_t head_vectors(int64_t n1) { return (n1 + kLanes - 1) / kLanes; }

inline float to_float(const void* base, DType dt, int64_t i) {
  if (dt == DType::kFloat32) return static_cast<const float*>(base)[i];
  const uint16_t h = static_cast<const uint16_t*>(base)[i];
  return dt == DType::kBFloat16 ? bf16_to_f32(h) : fp16_to_f32(h);
}

// The weights of the row, fp32, heads [n1, hv * kLanes) zero.
inline void stage_weights(const LiParams& p, const LiData& d, int64_t row, float* w) {
  const int64_t off = kvflash::cpu::li_weight_offset(p, row);
  const int64_t hp = head_vectors(p.num_heads) * kLanes;
  for (int64_t h = 0; h < hp; ++h)
    w[h] = h < p.num_heads ? to_float(d.weights, p.w_dtype, off + h * p.w_sh) : 0.0f;
}

// The query transposed to qt[d * hp + h] (fp32), heads past n1 zero.
inline void stage_query_f32(const LiParams& p, const LiData& d, int64_t row, float* qt) {
  const int64_t off = kvflash::cpu::li_query_offset(p, row);
  const int64_t hp = head_vectors(p.num_heads) * kLanes;
  for (int64_t h = 0; h < hp; ++h) {
    for (int64_t dd = 0; dd < kD; ++dd) {
      qt[dd * hp + h] =
          h < p.num_heads ? to_float(d.query, p.dtype, off + h * p.q_sh + dd * p.q_sd) : 0.0f;
    }
  }
}

// Key row j widened to fp32 (any d stride).
inline void widen_key(const LiParams& p, const uint16_t* src, float* dst) {
  if (p.k_sd == 1) {
    if (p.dtype == DType::kBFloat16) {
      for (int64_t dd = 0; dd < kD; dd += kLanes) vstore(dst + dd, vload_bf16(src + dd));
    } else {
      for (int64_t dd = 0; dd < kD; dd += kLanes) vstore(dst + dd, vload_fp16(src + dd));
    }
    return;
  }
  for (int64_t dd = 0; dd < kD; ++dd) dst[dd] = to_float(src, p.dtype, dd * p.k_sd);
}

// Key rows this far ahead of the block being scored are prefetched into L1: the rows of a paged
// cache are contiguous only within a block and the hardware prefetchers stop at 4 KiB pages, so
// without it a cold cache is read at about half the speed the scorer consumes it (measured: 0.32
// vs 0.16 ms for 4096 keys, cold vs warm, one Zen 5 core). One 128-token block ahead, prefetcht0:
// on the loaded Zen 5 it was the best of 32 / 64 / 128 / 256 / 512 rows x t0 / t1 / nta (4 x 8192
// cold keys, bench/li_bench.cpp: t0 at 128 rows 1.75 ms, t1 at 32 rows 1.84-2.13 ms, t1 at 256 or
// 512 1.86-2.21 ms). asm volatile as in ifa_inputs-inl.h (prefetch_row). Only valid keys (< n,
// block ids checked) are addressed.
constexpr int64_t kPrefetchAhead = 128;
inline void prefetch_key(const LiParams& p, const LiData& d, const LiRowRef& rr, int64_t j) {
  if (j >= rr.j1 || p.k_sd != 1) return;
  const uint16_t* row = kvflash::cpu::li_key_row(p, d, rr.batch, rr.kv_first, j);
  for (int64_t o = 0; o < kD; o += 32) __asm__ volatile("prefetcht0 %0" : : "m"(*(row + o)));
}

// acc[b][j] = sum over d of qt[d][(v0 + b) lanes] * k[j][d], in d order.
template <int HB, int KB>
inline void dot_f32(const float* qt, int64_t hp, int64_t v0, const float* const* k,
                    Vec (&acc)[HB][KB]) {
#pragma GCC unroll 16
  for (int b = 0; b < HB; ++b)
#pragma GCC unroll 16
    for (int j = 0; j < KB; ++j) acc[b][j] = vzero();
  const float* q = qt + v0 * kLanes;
  for (int64_t dd = 0; dd < kD; ++dd, q += hp) {
    Vec qv[HB];
#pragma GCC unroll 16
    for (int b = 0; b < HB; ++b) qv[b] = vload(q + b * kLanes);
#pragma GCC unroll 16
    for (int j = 0; j < KB; ++j) {
      const Vec kv = vset1(k[j][dd]);
#pragma GCC unroll 16
      for (int b = 0; b < HB; ++b) acc[b][j] = vfma(qv[b], kv, acc[b][j]);
    }
  }
}

// Lane indices 0, 1, ... as floats (for the padding-lane mask of the last head vector).
alignas(64) inline constexpr float kLaneIds[16] = {0, 1, 2,  3,  4,  5,  6,  7,
                                                   8, 9, 10, 11, 12, 13, 14, 15};
static_assert(kLanes <= 16);

// tv[j] = fma(w[v], relu(acc[b][j]), tv[j]) for head vectors v = v0 + b (b in order); lanes at
// or past `tail` of the last vector (hv - 1) have relu forced to 0 (their weight is 0), so they
// add 0 even when their accumulator is NaN. One explicit fma, not a multiply and an add: GCC
// contracts a*b + c in C++ (-ffp-contract=fast is its C++ default) where it sees fit, which made
// equal keys score differently by their position in the register block.
template <int HB, int KB>
inline void fold_heads(const Vec (&acc)[HB][KB], const float* w, int64_t v0, int64_t hv, int tail,
                       Vec* tv) {
#pragma GCC unroll 16
  for (int b = 0; b < HB; ++b) {
    const Vec wv = vload(w + (v0 + b) * kLanes);
    const bool masked = v0 + b == hv - 1 && tail != kLanes;
#pragma GCC unroll 16
    for (int j = 0; j < KB; ++j) {
      Vec r = vmax(vzero(), acc[b][j]);
      if (masked) r = vselect_lt(vload(kLaneIds), vset1(static_cast<float>(tail)), r, vzero());
      tv[j] = vfma(wv, r, tv[j]);
    }
  }
}

// The head loop for KB keys whose fp32 rows are k[0..KB): tv[j] as fold_heads defines it.
template <int KB>
inline void score_keys_f32(const float* qt, const float* w, int64_t hv, int tail,
                           const float* const* k, Vec* tv) {
  const int64_t hp = hv * kLanes;
  int64_t v0 = 0;
  for (; v0 + kHeadBlock <= hv; v0 += kHeadBlock) {
    Vec acc[kHeadBlock][KB];
    dot_f32<kHeadBlock, KB>(qt, hp, v0, k, acc);
    fold_heads<kHeadBlock, KB>(acc, w, v0, hv, tail, tv);
  }
  for (; v0 < hv; ++v0) {
    Vec acc[1][KB];
    dot_f32<1, KB>(qt, hp, v0, k, acc);
    fold_heads<1, KB>(acc, w, v0, hv, tail, tv);
  }
}

// The selection's first radix pass, fused into scoring: each key's first digit is counted as it
// is written (li_select_topk with hist_ready), so the selection reads the n keys once less, and
// the counter updates (a chain through memory when neighbouring keys share a bin) hide behind the
// dot products instead of forming a pass of their own.
inline void clear_hist(uint32_t* hist) {
  std::memset(hist, 0, sizeof(uint32_t) * kvflash::cpu::kLiRadixBins);
}
inline void put_key(float score, uint32_t* key, uint32_t* hist) {
  const uint32_t k = kvflash::cpu::li_order_key(score);
  *key = k;
  ++hist[k >> kvflash::cpu::kLiRadixShift0];
}

// Keys fetched (and staged) per step: one register block for one row; for a row group a chunk of
// kLiKeyChunk keys that each row scores in turn, so a row's staged query stays in L1 across the
// chunk's blocks while the chunk's keys stay there for the other row.
constexpr int64_t chunk_rows(int count) {
  return count == 1 ? kKeyBlock : kvflash::cpu::kLiKeyChunk;
}

// The end of the key range of a row group (rows of one batch, all from rows[0].j0).
inline int64_t group_end(const LiRowRef* rows, int count) {
  int64_t hi = rows[0].j1;
  for (int r = 1; r < count; ++r) hi = rows[r].j1 > hi ? rows[r].j1 : hi;
  return hi;
}

// One register block of keys for one row, out of line (see block_bf16).
__attribute__((noinline)) inline void block_f32(const float* qt, const float* w, int64_t hv,
                                                int tail, const float* const* k, uint32_t* keys,
                                                uint32_t* hist) {
  Vec tv[kKeyBlock];
  for (int i = 0; i < kKeyBlock; ++i) tv[i] = vzero();
  score_keys_f32<kKeyBlock>(qt, w, hv, tail, k, tv);
  for (int i = 0; i < kKeyBlock; ++i) put_key(vreduce_add(tv[i]), keys + i, hist);
}

// Order keys of the keys [j0, j1) of rows[0, count) (rows of one batch, one j0, each its own j1)
// into s[r].keys[j0, j1), written once for both scorers (Path: F32Path, Bf16Path). Each chunk of
// keys is read (and staged into s[0]'s scratch where the path needs it) once and scored for every
// row whose range covers it: query rows of one request (MTP, prefill) share the key reads. A row
// whose range ends inside a block takes the one-key path for its keys there, the same arithmetic
// as the block path.
template <class Path, int count>
__attribute__((always_inline)) inline void score_rows_n(const LiParams& p, const LiData& d,
                                                        const LiRowRef* rows, const LiScratch* s) {
  using Key = typename Path::Key;
  for (int r = 0; r < count; ++r) {
    if (rows[r].stage) {
      Path::stage_query(p, d, rows[r].row, s[r].q);
      stage_weights(p, d, rows[r].row, s[r].w);
    }
    clear_hist(s[r].hist);
  }
  const int64_t hv = head_vectors(p.num_heads);
  const int tail = static_cast<int>(p.num_heads - (hv - 1) * kLanes);
  constexpr int64_t kChunk = chunk_rows(count);
  const Key* k[kChunk];
  Path::point_keys(s[0], k, kChunk);
  LiRowRef span = rows[0];
  span.j1 = group_end(rows, count);
  kvflash::cpu::LiKeyCursor cur(p, d, span.batch, span.kv_first, span.j0);
  for (int64_t c0 = span.j0; c0 < span.j1; c0 += kChunk) {
    const int64_t c1 = c0 + kChunk < span.j1 ? c0 + kChunk : span.j1;
    for (int64_t j = c0; j < c1; ++j) {
      prefetch_key(p, d, span, j + kPrefetchAhead);
      Path::fetch_key(p, cur.next(), s[0], j - c0, k);
    }
    for (int r = 0; r < count; ++r) {
      const Key* q = reinterpret_cast<const Key*>(s[r].q);
      const int64_t e = c1 < rows[r].j1 ? c1 : rows[r].j1;
      int64_t j = c0;
      for (; j + kKeyBlock <= e; j += kKeyBlock) {
        Path::block(q, s[r].w, hv, tail, k + (j - c0), s[r].keys + j, s[r].hist);
      }
      for (; j < e; ++j) Path::one(q, s[r].w, hv, tail, k + (j - c0), s[r].keys + j, s[r].hist);
    }
  }
}

// The fp32 scorer: keys widened into s[0]'s scratch, FMA dot products.
struct F32Path {
  using Key = float;
  static void stage_query(const LiParams& p, const LiData& d, int64_t row, float* q) {
    stage_query_f32(p, d, row, q);
  }
  // Key i of a chunk is row i of s[0]'s scratch, where fetch_key widens it.
  static void point_keys(const LiScratch& s0, const float** k, int64_t n) {
    for (int64_t i = 0; i < n; ++i) k[i] = s0.kt + i * kD;
  }
  static void fetch_key(const LiParams& p, const uint16_t* src, const LiScratch& s0, int64_t i,
                        const float**) {
    widen_key(p, src, s0.kt + i * kD);
  }
  static void block(const float* q, const float* w, int64_t hv, int tail, const float* const* k,
                    uint32_t* keys, uint32_t* hist) {
    block_f32(q, w, hv, tail, k, keys, hist);
  }
  static void one(const float* q, const float* w, int64_t hv, int tail, const float* const* k,
                  uint32_t* key, uint32_t* hist) {
    Vec tv[1] = {vzero()};
    score_keys_f32<1>(q, w, hv, tail, k, tv);
    put_key(vreduce_add(tv[0]), key, hist);
  }
};

// The row count is a template argument so that the one-row loop (decode) compiles as tightly as
// a loop written for one row (a run-time count cost ~15% on 4 x 8k decode rows).
inline void score_rows_f32(const LiParams& p, const LiData& d, const LiRowRef* rows,
                           const LiScratch* s, int count) {
  static_assert(kvflash::cpu::kLiRowGroup == 2);
  if (count == 1) return score_rows_n<F32Path, 1>(p, d, rows, s);
  score_rows_n<F32Path, 2>(p, d, rows, s);
}

#ifdef KVFLASH_LI_BF16_DOT
// The bf16 pair path (avx512 translation unit only). The query as pairs: qp[(p * hp + h) * 2 + e]
// = q[h][2p + e] (bf16 bits), heads past n1 zero; one 64-byte load is 16 heads' pair p.
inline void stage_query_pairs(const LiParams& p, const LiData& d, int64_t row, uint16_t* qp) {
  const int64_t off = kvflash::cpu::li_query_offset(p, row);
  const int64_t hp = head_vectors(p.num_heads) * kLanes;
  const uint16_t* q = static_cast<const uint16_t*>(d.query);
  for (int64_t pr = 0; pr < kD / 2; ++pr) {
    for (int64_t h = 0; h < hp; ++h) {
      for (int64_t e = 0; e < 2; ++e) {
        qp[(pr * hp + h) * 2 + e] =
            h < p.num_heads ? q[off + h * p.q_sh + (2 * pr + e) * p.q_sd] : uint16_t{0};
      }
    }
  }
}

template <int HB, int KB>
__attribute__((target("avx512bf16"), always_inline)) inline void dot_bf16(const uint16_t* qp,
                                                                          int64_t hp, int64_t v0,
                                                                          const uint16_t* const* k,
                                                                          Vec (&acc)[HB][KB]) {
  __m512 a[HB][KB];
#pragma GCC unroll 16
  for (int b = 0; b < HB; ++b)
#pragma GCC unroll 16
    for (int j = 0; j < KB; ++j) a[b][j] = _mm512_setzero_ps();
  const uint16_t* q = qp + v0 * kLanes * 2;
  for (int64_t pr = 0; pr < kD / 2; ++pr, q += hp * 2) {
    __m512bh qv[HB];
#pragma GCC unroll 16
    for (int b = 0; b < HB; ++b) qv[b] = (__m512bh)_mm512_loadu_si512(q + b * kLanes * 2);
#pragma GCC unroll 16
    for (int j = 0; j < KB; ++j) {
      uint32_t pair;
      std::memcpy(&pair, k[j] + 2 * pr, sizeof(pair));
      const __m512bh kv = (__m512bh)_mm512_set1_epi32(static_cast<int>(pair));
#pragma GCC unroll 16
      for (int b = 0; b < HB; ++b) a[b][j] = _mm512_dpbf16_ps(a[b][j], qv[b], kv);
    }
  }
#pragma GCC unroll 16
  for (int b = 0; b < HB; ++b)
#pragma GCC unroll 16
    for (int j = 0; j < KB; ++j) acc[b][j] = Vec{a[b][j]};
}

template <int KB>
__attribute__((target("avx512bf16"), always_inline)) inline void score_keys_bf16(
    const uint16_t* qp, const float* w, int64_t hv, int tail, const uint16_t* const* k, Vec* tv) {
  const int64_t hp = hv * kLanes;
  int64_t v0 = 0;
  for (; v0 + kHeadBlock <= hv; v0 += kHeadBlock) {
    Vec acc[kHeadBlock][KB];
    dot_bf16<kHeadBlock, KB>(qp, hp, v0, k, acc);
    fold_heads<kHeadBlock, KB>(acc, w, v0, hv, tail, tv);
  }
  for (; v0 < hv; ++v0) {
    Vec acc[1][KB];
    dot_bf16<1, KB>(qp, hp, v0, k, acc);
    fold_heads<1, KB>(acc, w, v0, hv, tail, tv);
  }
}

// Key row j as contiguous bf16: the cache row itself when d is contiguous, else gathered to dst.
inline const uint16_t* bf16_key(const LiParams& p, const uint16_t* src, uint16_t* dst) {
  if (p.k_sd == 1) return src;
  for (int64_t dd = 0; dd < kD; ++dd) dst[dd] = src[dd * p.k_sd];
  return dst;
}

// One register block of keys for one row, out of line: inlined into the two-row loop, GCC kept
// query vectors of the block on the stack and reloaded them for every key (4 x 8k rows as 2
// requests x 2 rows: 2.1-2.4 ms against 1.55-1.8 as 4 x 1; out of line, the two are on par). One
// call per 4 keys (1024 vdpbf16ps at 64 heads).
__attribute__((target("avx512bf16"), noinline)) void block_bf16(const uint16_t* qp, const float* w,
                                                                int64_t hv, int tail,
                                                                const uint16_t* const* k,
                                                                uint32_t* keys, uint32_t* hist) {
  Vec tv[kKeyBlock];
  for (int i = 0; i < kKeyBlock; ++i) tv[i] = vzero();
  score_keys_bf16<kKeyBlock>(qp, w, hv, tail, k, tv);
  for (int i = 0; i < kKeyBlock; ++i) put_key(vreduce_add(tv[i]), keys + i, hist);
}

// One key's score with vdpbf16ps, out of line as block_bf16 (score_rows_n, which it serves, has
// no target of its own).
__attribute__((target("avx512bf16"), noinline)) void one_bf16(const uint16_t* qp, const float* w,
                                                              int64_t hv, int tail,
                                                              const uint16_t* const* k,
                                                              uint32_t* key, uint32_t* hist) {
  Vec tv[1] = {vzero()};
  score_keys_bf16<1>(qp, w, hv, tail, k, tv);
  put_key(vreduce_add(tv[0]), key, hist);
}

// The bf16 scorer (vdpbf16ps): the query as pairs, the key rows used in place (gathered into
// s[0]'s scratch when strided).
struct Bf16Path {
  using Key = uint16_t;
  static void stage_query(const LiParams& p, const LiData& d, int64_t row, float* q) {
    stage_query_pairs(p, d, row, reinterpret_cast<uint16_t*>(q));
  }
  // Key i of a chunk is the cache row itself, or gathered into s[0]'s scratch.
  static void point_keys(const LiScratch&, const uint16_t**, int64_t) {}
  static void fetch_key(const LiParams& p, const uint16_t* src, const LiScratch& s0, int64_t i,
                        const uint16_t** k) {
    k[i] = bf16_key(p, src, s0.kb + i * kD);
  }
  static void block(const uint16_t* qp, const float* w, int64_t hv, int tail,
                    const uint16_t* const* k, uint32_t* keys, uint32_t* hist) {
    block_bf16(qp, w, hv, tail, k, keys, hist);
  }
  static void one(const uint16_t* qp, const float* w, int64_t hv, int tail,
                  const uint16_t* const* k, uint32_t* key, uint32_t* hist) {
    one_bf16(qp, w, hv, tail, k, key, hist);
  }
};

__attribute__((target("avx512bf16"), noinline)) void score_rows_bf16(
    const LiParams& p, const LiData& d, const LiRowRef* rows, const LiScratch* s, int count) {
  static_assert(kvflash::cpu::kLiRowGroup == 2);
  if (count == 1) return score_rows_n<Bf16Path, 1>(p, d, rows, s);
  score_rows_n<Bf16Path, 2>(p, d, rows, s);
}
#endif  // KVFLASH_LI_BF16_DOT

#ifdef KVFLASH_LI_TILES
#include "cpu/li/li_tiles-inl.h"
#endif

}  // namespace li_body
