// The IFA kernel body, written once against the thin vector type. No include guard on purpose:
// each ifa_kernel_<isa>.cpp includes it inside its own namespace (kvflash::cpu::<isa>) after
// simd_<isa>.h, simd_math-inl.h and softmax_state.h, with <cstring>,
// ops/ifa/ifa_problem.hpp and cpu/ifa/ifa_workspace.hpp included before the namespace. A unit
// that defines KVFLASH_IFA_TILES also gets the matrix-engine half (ifa_tiles-inl.h, which needs
// <cassert> and cpu/amx/amx_kernels.hpp before the namespace): ifa_chunk_on<TileEngine<...>>.
//
// Per chunk task: the G query heads of kv head n2 are processed together, so each K and V row is
// read from memory once; a task covers one chunk for a few adjacent kv heads, tile by tile and
// within a tile position-major across its kv heads, so its reads stream through one region of
// memory. Contiguous rows of dp channels are widened in registers straight from the cache (bf16
// K with a bf16 query: AVX512-BF16 dot products where the CPU has them); strided or padded rows
// are first widened into a small fp32 buffer padded with zeros to dp. int8 rows stay raw
// integers: the antiquant scale and offset are folded into the query, a per-head score bias and
// the final accumulator (fp32, so rounding differs slightly from dequantising each element);
// per-token parameters (core::IfaParams::token_k / token_v) scale each score and each weight
// instead (KvHeadWork::fold).
// Scores follow docs/semantics.md §2.5: s = fl32(q·k * scale), + pse, then mask replacement by
// kMaskedScore. Only positions in [begin, end) of the chunk are ever addressed (prefetches
// included).
//
// Everything here calls only functions of its own ISA namespace or non-inline library functions:
// an inline function from a shared header, compiled with this translation unit's ISA flags, could
// be the copy the linker keeps for plain-x86-64 callers (hence min_i64 instead of std::min).

namespace ifa_detail {

using core::IfaData;
using core::IfaProblem;

// kF32: a row already widened into an fp32 buffer (strided or padded rows).
enum class KvKind { kFp16, kBf16, kInt8, kF32 };

inline int64_t min_i64(int64_t a, int64_t b) { return a < b ? a : b; }

template <KvKind kKind>
constexpr int64_t kv_elem_size() {
  return kKind == KvKind::kInt8 ? 1 : (kKind == KvKind::kF32 ? 4 : 2);
}

// Element i (in elements from row) of a K/V row, widened; memcpy because rows may be misaligned.
template <KvKind kKind>
inline float kv_scalar(const std::byte* row, int64_t i) {
  if constexpr (kKind == KvKind::kInt8) {
    int8_t x;
    std::memcpy(&x, row + i, sizeof(x));
    return static_cast<float>(x);
  } else {
    uint16_t h;
    std::memcpy(&h, row + 2 * i, sizeof(h));
    return kKind == KvKind::kFp16 ? fp16_to_f32(h) : bf16_to_f32(h);
  }
}

template <KvKind kKind>
inline Vec kv_vector(const std::byte* p) {
  if constexpr (kKind == KvKind::kInt8) {
    return vload_int8(reinterpret_cast<const int8_t*>(p));
  } else if constexpr (kKind == KvKind::kFp16) {
    return vload_fp16(reinterpret_cast<const uint16_t*>(p));
  } else if constexpr (kKind == KvKind::kF32) {
    return vload(reinterpret_cast<const float*>(p));
  } else {
    return vload_bf16(reinterpret_cast<const uint16_t*>(p));
  }
}

// dst[0, dp) = the d channels of a row (channel stride s_dim) widened to fp32 (int8: the raw
// integers; the antiquant scale and offset are folded into q and the accumulator, see
// KvHeadWork), zero padded.
template <KvKind kKind>
inline void load_row(const std::byte* row, int64_t s_dim, int64_t d, int64_t dp, float* dst) {
  int64_t i = 0;
  if (s_dim == 1) {
    for (; i + kLanes <= d; i += kLanes)
      vstore(dst + i, kv_vector<kKind>(row + i * kv_elem_size<kKind>()));
  }
  for (; i < d; ++i) dst[i] = kv_scalar<kKind>(row, i * s_dim);
  for (; i < dp; ++i) dst[i] = 0.0f;
}

// Channel stride of the K or V rows of sequence b.
inline int64_t kv_dim_stride(const core::KvCacheView& kv,
                             const std::vector<core::KvCacheView::Seq>& seqs, int64_t b) {
  return kv.paged ? kv.s_dim : seqs[b].s_dim;
}

// Addresses of the K and V rows of kv head n2 for positions [j, j + n) (n >= 1, all attended) of
// sequence b. A paged cache costs one division per call and one block-table read per block, not
// a division per row; no block-table entry beyond the last position is read.
template <KvKind kKind>
inline void kv_rows(const IfaProblem& p, const IfaData& d, int64_t b, int64_t n2, int64_t j,
                    int64_t n, const std::byte** k_rows, const std::byte** v_rows) {
  constexpr int64_t es = kv_elem_size<kKind>();
  if (!p.k.paged) {
    const core::KvCacheView::Seq& ks = p.k_seqs[b];
    const core::KvCacheView::Seq& vs = p.v_seqs[b];
    const auto* kb =
        static_cast<const std::byte*>(d.k_seq[b]) + (j * ks.s_pos + n2 * ks.s_head) * es;
    const auto* vb =
        static_cast<const std::byte*>(d.v_seq[b]) + (j * vs.s_pos + n2 * vs.s_head) * es;
    for (int64_t i = 0; i < n; ++i) {
      k_rows[i] = kb + i * ks.s_pos * es;
      v_rows[i] = vb + i * vs.s_pos * es;
    }
    return;
  }
  const core::BlockTableView& bt = p.block_table;
  const auto* kc = static_cast<const std::byte*>(d.k_cache) + n2 * p.k.s_head * es;
  const auto* vc = static_cast<const std::byte*>(d.v_cache) + n2 * p.v.s_head * es;
  int64_t slot = j / bt.block_size;
  int64_t o = j % bt.block_size;
  int64_t blk = d.block_table[b * bt.s0 + slot * bt.s1];
  for (int64_t i = 0; i < n; ++i, ++o) {
    if (o == bt.block_size) {
      ++slot;
      o = 0;
      blk = d.block_table[b * bt.s0 + slot * bt.s1];
    }
    k_rows[i] = kc + (blk * p.k.s_block + o * p.k.s_pos) * es;
    v_rows[i] = vc + (blk * p.v.s_block + o * p.v.s_pos) * es;
  }
}

// Software prefetch of one row's cache lines into L2 (prefetcht1: L1 has too few miss buffers
// to keep enough lines in flight; measured 25% faster than prefetcht0 on Zen 4, and 27-36% on an
// Intel Xeon in kvflash_read_rate_bench, bench/read_rate_bench.cpp). Rows of one kv
// head are typically 1-4 KB apart (BSH/BSND caches interleave the heads) and paged blocks are
// scattered, which hardware prefetchers follow poorly: without this a row costs a memory latency
// (measured 20-40% slower even with the position-major order).
// The instruction is issued with asm volatile rather than __builtin_prefetch: GCC's pure-const
// analysis treats a function whose only effect is __builtin_prefetch as side-effect free and
// deletes calls to it when it is not inlined early (measured: every prefetch vanished). A
// prefetch never faults and reads nothing architecturally.
inline void prefetch_row(const std::byte* row, int64_t bytes) {
  constexpr int64_t kLine = 64;
  for (int64_t o = 0; o < bytes; o += kLine) {
    __asm__ volatile("prefetcht1 %0" : : "m"(*(row + o)));
  }
}

// Element index of a View3 of the query dtype bound at data, widened.
inline float view_f32(const core::View3& v, const void* data, int64_t index) {
  uint16_t h;
  std::memcpy(&h, static_cast<const uint16_t*>(data) + index, sizeof(h));
  return v.dtype == DType::kFloat16 ? fp16_to_f32(h) : bf16_to_f32(h);
}

// Element index of an fp16 / bf16 / fp32 parameter tensor (sink, per-token antiquant), widened.
inline float param_f32(DType dtype, const void* data, int64_t index) {
  if (dtype == DType::kFloat32) {
    float x;
    std::memcpy(&x, static_cast<const float*>(data) + index, sizeof(x));
    return x;
  }
  uint16_t x;
  std::memcpy(&x, static_cast<const uint16_t*>(data) + index, sizeof(x));
  return dtype == DType::kFloat16 ? fp16_to_f32(x) : bf16_to_f32(x);
}

// q[0, d) = query row (b, h) widened to fp32: kLanes at a time when its channels are contiguous
// (a per-element loop cost about a fifth of a 16-token call), else element by element.
inline void load_query(const IfaProblem& p, const IfaData& data, int64_t b, int64_t h, float* q) {
  const int64_t d = p.head_dim;
  int64_t i = 0;
  if (p.q.s2 == 1) {
    const uint16_t* src = static_cast<const uint16_t*>(data.q) + p.q.index(b, h, 0);
    const bool fp16 = p.q.dtype == DType::kFloat16;
    for (; i + kLanes <= d; i += kLanes)
      vstore(q + i, fp16 ? vload_fp16(src + i) : vload_bf16(src + i));
  }
  for (; i < d; ++i) q[i] = view_f32(p.q, data.q, p.q.index(b, h, i));
}

// K rows scored together: the rows of a block are widened into kBlockRows fp32 buffers,
// kIfaMaxHeadDim apart.
inline constexpr int64_t kBlockRows = 4;
static_assert(kBlockRows == 4, "score_block is written for four rows");

// Scores of four K rows k[0..3] (of kind kSrc: read and widened in place) against one, two or
// four query heads (q, head_floats apart), into s[g + h][t0 .. t0 + 3]. The accumulators are
// named variables: GCC keeps an array of vectors in memory rather than in registers.
template <KvKind kSrc>
inline void score_rows_1head(const float* q, const std::byte* const* k, int64_t dp, float* out) {
  constexpr int64_t es = kv_elem_size<kSrc>();
  const std::byte *k0 = k[0], *k1 = k[1], *k2 = k[2], *k3 = k[3];
  Vec a0 = vzero(), a1 = vzero(), a2 = vzero(), a3 = vzero();
  for (int64_t i = 0; i < dp; i += kLanes) {
    const Vec qv = vload(q + i);
    a0 = vfma(qv, kv_vector<kSrc>(k0 + i * es), a0);
    a1 = vfma(qv, kv_vector<kSrc>(k1 + i * es), a1);
    a2 = vfma(qv, kv_vector<kSrc>(k2 + i * es), a2);
    a3 = vfma(qv, kv_vector<kSrc>(k3 + i * es), a3);
  }
  vreduce_add4(a0, a1, a2, a3, out);
}

template <KvKind kSrc>
inline void score_rows_2heads(const float* q, int64_t head_floats, const std::byte* const* k,
                              int64_t dp, float* out_a, float* out_b) {
  constexpr int64_t es = kv_elem_size<kSrc>();
  const std::byte *k0 = k[0], *k1 = k[1], *k2 = k[2], *k3 = k[3];
  const float* qb = q + head_floats;
  Vec a0 = vzero(), a1 = vzero(), a2 = vzero(), a3 = vzero();
  Vec b0 = vzero(), b1 = vzero(), b2 = vzero(), b3 = vzero();
  for (int64_t i = 0; i < dp; i += kLanes) {
    const Vec x0 = kv_vector<kSrc>(k0 + i * es), x1 = kv_vector<kSrc>(k1 + i * es);
    const Vec x2 = kv_vector<kSrc>(k2 + i * es), x3 = kv_vector<kSrc>(k3 + i * es);
    const Vec va = vload(q + i), vb = vload(qb + i);
    a0 = vfma(va, x0, a0), a1 = vfma(va, x1, a1), a2 = vfma(va, x2, a2), a3 = vfma(va, x3, a3);
    b0 = vfma(vb, x0, b0), b1 = vfma(vb, x1, b1), b2 = vfma(vb, x2, b2), b3 = vfma(vb, x3, b3);
  }
  vreduce_add4(a0, a1, a2, a3, out_a);
  vreduce_add4(b0, b1, b2, b3, out_b);
}

template <KvKind kSrc>
inline void score_rows_4heads(const float* q, int64_t head_floats, const std::byte* const* k,
                              int64_t dp, float (*s)[kIfaTile], int64_t g, int64_t t0) {
  constexpr int64_t es = kv_elem_size<kSrc>();
  const std::byte *k0 = k[0], *k1 = k[1], *k2 = k[2], *k3 = k[3];
  const float* qb = q + head_floats;
  const float* qc = qb + head_floats;
  const float* qd = qc + head_floats;
  Vec a0 = vzero(), a1 = vzero(), a2 = vzero(), a3 = vzero();
  Vec b0 = vzero(), b1 = vzero(), b2 = vzero(), b3 = vzero();
  Vec c0 = vzero(), c1 = vzero(), c2 = vzero(), c3 = vzero();
  Vec d0 = vzero(), d1 = vzero(), d2 = vzero(), d3 = vzero();
  for (int64_t i = 0; i < dp; i += kLanes) {
    const Vec x0 = kv_vector<kSrc>(k0 + i * es), x1 = kv_vector<kSrc>(k1 + i * es);
    const Vec x2 = kv_vector<kSrc>(k2 + i * es), x3 = kv_vector<kSrc>(k3 + i * es);
    const Vec va = vload(q + i), vb = vload(qb + i), vc = vload(qc + i), vd = vload(qd + i);
    a0 = vfma(va, x0, a0), a1 = vfma(va, x1, a1), a2 = vfma(va, x2, a2), a3 = vfma(va, x3, a3);
    b0 = vfma(vb, x0, b0), b1 = vfma(vb, x1, b1), b2 = vfma(vb, x2, b2), b3 = vfma(vb, x3, b3);
    c0 = vfma(vc, x0, c0), c1 = vfma(vc, x1, c1), c2 = vfma(vc, x2, c2), c3 = vfma(vc, x3, c3);
    d0 = vfma(vd, x0, d0), d1 = vfma(vd, x1, d1), d2 = vfma(vd, x2, d2), d3 = vfma(vd, x3, d3);
  }
  vreduce_add4(a0, a1, a2, a3, s[g] + t0);
  vreduce_add4(b0, b1, b2, b3, s[g + 1] + t0);
  vreduce_add4(c0, c1, c2, c3, s[g + 2] + t0);
  vreduce_add4(d0, d1, d2, d3, s[g + 3] + t0);
}

// Scores of two K rows k[0..1] against four query heads into s[g + h][t0 .. t0 + 1] (AVX2 with
// four or more heads: 8 accumulators and 2 rows fit its 16 registers, so each K vector is widened
// once per four heads instead of once per two). Per (row, head) the same sum as the others.
template <KvKind kSrc>
inline void score_rows2_4heads(const float* q, int64_t head_floats, const std::byte* const* k,
                               int64_t dp, float (*s)[kIfaTile], int64_t g, int64_t t0) {
  constexpr int64_t es = kv_elem_size<kSrc>();
  const std::byte *k0 = k[0], *k1 = k[1];
  const float* qb = q + head_floats;
  const float* qc = qb + head_floats;
  const float* qd = qc + head_floats;
  Vec a0 = vzero(), a1 = vzero(), b0 = vzero(), b1 = vzero();
  Vec c0 = vzero(), c1 = vzero(), d0 = vzero(), d1 = vzero();
  for (int64_t i = 0; i < dp; i += kLanes) {
    const Vec x0 = kv_vector<kSrc>(k0 + i * es), x1 = kv_vector<kSrc>(k1 + i * es);
    const Vec va = vload(q + i), vb = vload(qb + i), vc = vload(qc + i), vd = vload(qd + i);
    a0 = vfma(va, x0, a0), a1 = vfma(va, x1, a1), b0 = vfma(vb, x0, b0), b1 = vfma(vb, x1, b1);
    c0 = vfma(vc, x0, c0), c1 = vfma(vc, x1, c1), d0 = vfma(vd, x0, d0), d1 = vfma(vd, x1, d1);
  }
  float r0[4], r1[4];
  vreduce_add4(a0, b0, c0, d0, r0);
  vreduce_add4(a1, b1, c1, d1, r1);
  for (int64_t h = 0; h < 4; ++h) {
    s[g + h][t0] = r0[h];
    s[g + h][t0 + 1] = r1[h];
  }
}

// s[g][t0 + r] = q_g · k_r for every head g of the group (q_g at q0 + g * head_floats) and the
// kBlockRows rows k[r] (dp channels each, of kind kSrc). Heads go up to kScoreHeads at a time
// (as many as the ISA's registers hold), so 4 x kScoreHeads independent FMA chains share each
// load of k and q; each (row, head) sum has the same order in every variant.
template <KvKind kSrc>
inline void score_block(const float* q0, int64_t head_floats, int64_t group, int64_t dp,
                        const std::byte* const* k, float (*s)[kIfaTile], int64_t t0) {
  int64_t g = 0;
  if constexpr (kScoreHeads >= 4) {
    for (; g + 4 <= group; g += 4)
      score_rows_4heads<kSrc>(q0 + g * head_floats, head_floats, k, dp, s, g, t0);
  } else if constexpr (kScoreHeads == 2) {
    for (; g + 4 <= group; g += 4) {
      score_rows2_4heads<kSrc>(q0 + g * head_floats, head_floats, k, dp, s, g, t0);
      score_rows2_4heads<kSrc>(q0 + g * head_floats, head_floats, k + 2, dp, s, g, t0 + 2);
    }
  }
  if constexpr (kScoreHeads >= 2) {
    for (; g + 2 <= group; g += 2) {
      score_rows_2heads<kSrc>(q0 + g * head_floats, head_floats, k, dp, s[g] + t0, s[g + 1] + t0);
    }
  }
  for (; g < group; ++g) score_rows_1head<kSrc>(q0 + g * head_floats, k, dp, s[g] + t0);
}

// s[g][t] = q_g · k for one row (the tail of a tile), reduced the same way as score_block.
template <KvKind kSrc>
inline void score_row(const float* q0, int64_t head_floats, int64_t group, int64_t dp,
                      const std::byte* k, float (*s)[kIfaTile], int64_t t) {
  constexpr int64_t es = kv_elem_size<kSrc>();
  for (int64_t g = 0; g < group; ++g) {
    const float* q = q0 + g * head_floats;
    Vec a = vzero();
    for (int64_t i = 0; i < dp; i += kLanes) a = vfma(vload(q + i), kv_vector<kSrc>(k + i * es), a);
    float sums[4];
    vreduce_add4(a, vzero(), vzero(), vzero(), sums);
    s[g][t] = sums[0];
  }
}

#ifdef KVFLASH_IFA_BF16_DOT
// Scores of bf16 K against a bf16 query with AVX512-BF16 (only the avx512 translation unit
// defines KVFLASH_IFA_BF16_DOT): vdpbf16ps multiplies pairs of bf16 exactly and accumulates in
// fp32, so a row costs half the FMAs of the widened path and no conversions. The inputs are
// bf16 already, so nothing is rounded that the fp32 path keeps; the sums round in another
// order (allowed), and inputs and results below 2^-126 are flushed to zero (negligible next to
// the tolerance). Which path runs depends only on the active ISA (kAvx512Bf16, see isa.hpp) and
// the problem, never on threads.

// s[g][t0 + r] = q_g · k[r] for the group's heads (q_g at q0 + g * dp, bf16) and `rows` rows
// (4 or 1); dp is a multiple of 32.
__attribute__((target("avx512bf16"), noinline)) void score_bf16_dot(
    const uint16_t* q0, int64_t group, int64_t dp, const std::byte* const* k, int64_t rows,
    float (*s)[kIfaTile], int64_t t0) {
  const auto bh = [](const void* p) {
    return (__m512bh)_mm512_loadu_si512(p);  // a vector reinterpretation
  };
  if (rows == 1) {
    for (int64_t g = 0; g < group; ++g) {
      const uint16_t* q = q0 + g * dp;
      __m512 a = _mm512_setzero_ps();
      for (int64_t i = 0; i < dp; i += 32) a = _mm512_dpbf16_ps(a, bh(q + i), bh(k[0] + 2 * i));
      float sums[4];
      vreduce_add4(Vec{a}, vzero(), vzero(), vzero(), sums);
      s[g][t0] = sums[0];
    }
    return;
  }
  const std::byte *k0 = k[0], *k1 = k[1], *k2 = k[2], *k3 = k[3];
  int64_t g = 0;
  for (; g + 4 <= group; g += 4) {
    const uint16_t* qa = q0 + g * dp;
    const uint16_t* qb = qa + dp;
    const uint16_t* qc = qb + dp;
    const uint16_t* qd = qc + dp;
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    __m512 b0 = a0, b1 = a0, b2 = a0, b3 = a0;
    __m512 c0 = a0, c1 = a0, c2 = a0, c3 = a0;
    __m512 d0 = a0, d1 = a0, d2 = a0, d3 = a0;
    for (int64_t i = 0; i < dp; i += 32) {
      const __m512bh x0 = bh(k0 + 2 * i), x1 = bh(k1 + 2 * i), x2 = bh(k2 + 2 * i),
                     x3 = bh(k3 + 2 * i);
      const __m512bh va = bh(qa + i), vb = bh(qb + i), vc = bh(qc + i), vd = bh(qd + i);
      a0 = _mm512_dpbf16_ps(a0, va, x0), a1 = _mm512_dpbf16_ps(a1, va, x1);
      a2 = _mm512_dpbf16_ps(a2, va, x2), a3 = _mm512_dpbf16_ps(a3, va, x3);
      b0 = _mm512_dpbf16_ps(b0, vb, x0), b1 = _mm512_dpbf16_ps(b1, vb, x1);
      b2 = _mm512_dpbf16_ps(b2, vb, x2), b3 = _mm512_dpbf16_ps(b3, vb, x3);
      c0 = _mm512_dpbf16_ps(c0, vc, x0), c1 = _mm512_dpbf16_ps(c1, vc, x1);
      c2 = _mm512_dpbf16_ps(c2, vc, x2), c3 = _mm512_dpbf16_ps(c3, vc, x3);
      d0 = _mm512_dpbf16_ps(d0, vd, x0), d1 = _mm512_dpbf16_ps(d1, vd, x1);
      d2 = _mm512_dpbf16_ps(d2, vd, x2), d3 = _mm512_dpbf16_ps(d3, vd, x3);
    }
    vreduce_add4(Vec{a0}, Vec{a1}, Vec{a2}, Vec{a3}, s[g] + t0);
    vreduce_add4(Vec{b0}, Vec{b1}, Vec{b2}, Vec{b3}, s[g + 1] + t0);
    vreduce_add4(Vec{c0}, Vec{c1}, Vec{c2}, Vec{c3}, s[g + 2] + t0);
    vreduce_add4(Vec{d0}, Vec{d1}, Vec{d2}, Vec{d3}, s[g + 3] + t0);
  }
  for (; g < group; ++g) {
    const uint16_t* q = q0 + g * dp;
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t i = 0; i < dp; i += 32) {
      const __m512bh v = bh(q + i);
      a0 = _mm512_dpbf16_ps(a0, v, bh(k0 + 2 * i)), a1 = _mm512_dpbf16_ps(a1, v, bh(k1 + 2 * i));
      a2 = _mm512_dpbf16_ps(a2, v, bh(k2 + 2 * i)), a3 = _mm512_dpbf16_ps(a3, v, bh(k3 + 2 * i));
    }
    vreduce_add4(Vec{a0}, Vec{a1}, Vec{a2}, Vec{a3}, s[g] + t0);
  }
}
#else
inline void score_bf16_dot(const uint16_t*, int64_t, int64_t, const std::byte* const*, int64_t,
                           float (*)[kIfaTile], int64_t) {}
#endif

// V rows per P·V step: each accumulator vector is loaded and stored once per kPvRows rows.
inline constexpr int64_t kPvRows = 8;
static_assert(kPvRows == 8 && kIfaTile % kPvRows == 0, "accumulate_pv is written for 8 rows");

// acc[0, dp) += sum over r < m (in order) of p[r] * rows[r][0, dp), rows kIfaMaxHeadDim apart.
inline void accumulate_pv(float* acc, int64_t dp, const float* p, const float* rows, int64_t m) {
  if (m == kPvRows) {
    const Vec p0 = vset1(p[0]), p1 = vset1(p[1]), p2 = vset1(p[2]), p3 = vset1(p[3]);
    const Vec p4 = vset1(p[4]), p5 = vset1(p[5]), p6 = vset1(p[6]), p7 = vset1(p[7]);
    const float* r0 = rows;
    for (int64_t c = 0; c < dp; c += kLanes) {
      const float* r = r0 + c;
      Vec a = vload(acc + c);
      a = vfma(p0, vload(r), a);
      a = vfma(p1, vload(r + kIfaMaxHeadDim), a);
      a = vfma(p2, vload(r + 2 * kIfaMaxHeadDim), a);
      a = vfma(p3, vload(r + 3 * kIfaMaxHeadDim), a);
      a = vfma(p4, vload(r + 4 * kIfaMaxHeadDim), a);
      a = vfma(p5, vload(r + 5 * kIfaMaxHeadDim), a);
      a = vfma(p6, vload(r + 6 * kIfaMaxHeadDim), a);
      a = vfma(p7, vload(r + 7 * kIfaMaxHeadDim), a);
      vstore(acc + c, a);
    }
    return;
  }
  for (int64_t r = 0; r < m; ++r) {
    const Vec pr = vset1(p[r]);
    const float* row = rows + r * kIfaMaxHeadDim;
    for (int64_t c = 0; c < dp; c += kLanes)
      vstore(acc + c, vfma(pr, vload(row + c), vload(acc + c)));
  }
}

// acc_g[0, dp) += sum over r < 4 (in order) of s[g][i0 + r] * v[r] for heads g in
// [g0, g0 + kScoreHeads) (accumulators head_floats apart), V rows of kind kSrc read in place:
// each V vector is widened once for all the heads, and the weights stay in registers.
template <KvKind kSrc>
inline void pv_rows4_heads4(float* acc, int64_t head_floats, int64_t dp, float (*s)[kIfaTile],
                            int64_t g0, int64_t i0, const std::byte* const* v) {
  constexpr int64_t es = kv_elem_size<kSrc>();
  const std::byte *v0 = v[0], *v1 = v[1], *v2 = v[2], *v3 = v[3];
  const float *sa = s[g0] + i0, *sb = s[g0 + 1] + i0, *sc = s[g0 + 2] + i0, *sd = s[g0 + 3] + i0;
  const Vec pa0 = vset1(sa[0]), pa1 = vset1(sa[1]), pa2 = vset1(sa[2]), pa3 = vset1(sa[3]);
  const Vec pb0 = vset1(sb[0]), pb1 = vset1(sb[1]), pb2 = vset1(sb[2]), pb3 = vset1(sb[3]);
  const Vec pc0 = vset1(sc[0]), pc1 = vset1(sc[1]), pc2 = vset1(sc[2]), pc3 = vset1(sc[3]);
  const Vec pd0 = vset1(sd[0]), pd1 = vset1(sd[1]), pd2 = vset1(sd[2]), pd3 = vset1(sd[3]);
  float* aa = acc + g0 * head_floats;
  float* ab = aa + head_floats;
  float* ac = ab + head_floats;
  float* ad = ac + head_floats;
  for (int64_t c = 0; c < dp; c += kLanes) {
    const Vec x0 = kv_vector<kSrc>(v0 + c * es), x1 = kv_vector<kSrc>(v1 + c * es);
    const Vec x2 = kv_vector<kSrc>(v2 + c * es), x3 = kv_vector<kSrc>(v3 + c * es);
    vstore(aa + c, vfma(pa3, x3, vfma(pa2, x2, vfma(pa1, x1, vfma(pa0, x0, vload(aa + c))))));
    vstore(ab + c, vfma(pb3, x3, vfma(pb2, x2, vfma(pb1, x1, vfma(pb0, x0, vload(ab + c))))));
    vstore(ac + c, vfma(pc3, x3, vfma(pc2, x2, vfma(pc1, x1, vfma(pc0, x0, vload(ac + c))))));
    vstore(ad + c, vfma(pd3, x3, vfma(pd2, x2, vfma(pd1, x1, vfma(pd0, x0, vload(ad + c))))));
  }
}

// The same for the two heads g0, g0 + 1 (AVX2: 8 weights, 4 rows and 2 accumulators fill its 16
// registers): each V vector widened once per pair of heads instead of once per head.
template <KvKind kSrc>
inline void pv_rows4_heads2(float* acc, int64_t head_floats, int64_t dp, float (*s)[kIfaTile],
                            int64_t g0, int64_t i0, const std::byte* const* v) {
  constexpr int64_t es = kv_elem_size<kSrc>();
  const std::byte *v0 = v[0], *v1 = v[1], *v2 = v[2], *v3 = v[3];
  const float *sa = s[g0] + i0, *sb = s[g0 + 1] + i0;
  const Vec pa0 = vset1(sa[0]), pa1 = vset1(sa[1]), pa2 = vset1(sa[2]), pa3 = vset1(sa[3]);
  const Vec pb0 = vset1(sb[0]), pb1 = vset1(sb[1]), pb2 = vset1(sb[2]), pb3 = vset1(sb[3]);
  float* aa = acc + g0 * head_floats;
  float* ab = aa + head_floats;
  for (int64_t c = 0; c < dp; c += kLanes) {
    const Vec x0 = kv_vector<kSrc>(v0 + c * es), x1 = kv_vector<kSrc>(v1 + c * es);
    const Vec x2 = kv_vector<kSrc>(v2 + c * es), x3 = kv_vector<kSrc>(v3 + c * es);
    vstore(aa + c, vfma(pa3, x3, vfma(pa2, x2, vfma(pa1, x1, vfma(pa0, x0, vload(aa + c))))));
    vstore(ab + c, vfma(pb3, x3, vfma(pb2, x2, vfma(pb1, x1, vfma(pb0, x0, vload(ab + c))))));
  }
}

// The same for one head g.
template <KvKind kSrc>
inline void pv_rows4_head1(float* acc, int64_t head_floats, int64_t dp, float (*s)[kIfaTile],
                           int64_t g, int64_t i0, const std::byte* const* v) {
  constexpr int64_t es = kv_elem_size<kSrc>();
  const std::byte *v0 = v[0], *v1 = v[1], *v2 = v[2], *v3 = v[3];
  const float* sg = s[g] + i0;
  const Vec p0 = vset1(sg[0]), p1 = vset1(sg[1]), p2 = vset1(sg[2]), p3 = vset1(sg[3]);
  float* a = acc + g * head_floats;
  for (int64_t c = 0; c < dp; c += kLanes) {
    const Vec x0 = kv_vector<kSrc>(v0 + c * es), x1 = kv_vector<kSrc>(v1 + c * es);
    const Vec x2 = kv_vector<kSrc>(v2 + c * es), x3 = kv_vector<kSrc>(v3 + c * es);
    vstore(a + c, vfma(p3, x3, vfma(p2, x2, vfma(p1, x1, vfma(p0, x0, vload(a + c))))));
  }
}

// Byte distance between the rows of kv heads n2 and n2 + 1 at one position of sequence b.
template <KvKind kKind>
inline int64_t kv_head_bytes(const core::KvCacheView& kv,
                             const std::vector<core::KvCacheView::Seq>& seqs, int64_t b) {
  return (kv.paged ? kv.s_head : seqs[b].s_head) * kv_elem_size<kKind>();
}

// The row addresses of one tile, for the first kv head of a task: every other head of the task is
// a fixed byte offset away, so the block table is read once per tile, not once per head.
struct TileRows {
  int64_t n = 0;       ///< positions in this tile
  int64_t n_next = 0;  ///< positions of the next tile of the chunk (prefetched), 0 if none
  const std::byte* k[kIfaTile];
  const std::byte* v[kIfaTile];
  const std::byte* k_next[kIfaTile];
  const std::byte* v_next[kIfaTile];
};

// The part of a chunk task that belongs to one kv head n2: its G query heads' states and the
// per-tile work. A task runs several of these (adjacent kv heads) position block by position
// block, so when the heads of one position are adjacent in memory (BSH/BSND, paged or not) the
// task reads its region front to back, which hardware prefetchers follow. Every head's
// arithmetic (and so every bit) is the same in any interleaving.
template <KvKind kKind>
class KvHeadWork {
 public:
  // qbf: room for the group's queries as bf16 (group * dp), used when K is scored with bf16 dots.
  void init(const IfaProblem& p, const IfaData& data, const IfaLayout& l, std::byte* base,
            const IfaChunkTask& t, int64_t n2, SoftmaxState* st, bool* any_unmasked,
            uint16_t* qbf) {
    p_ = &p;
    d_ = &data;
    l_ = &l;
    b_ = t.b;
    n2_ = n2;
    k_bf16_dot_ = false;
    qbf_ = nullptr;
    k_sc_ = v_sc_ = k_off_ = v_off_ = nullptr;
    any_exact_ = false;
    across_ = t.prefetch_across;
    st_ = st;
    any_unmasked_ = any_unmasked;
    k_head_off_ = (n2 - t.n2_begin) * kv_head_bytes<kKind>(p.k, p.k_seqs, t.b);
    v_head_off_ = (n2 - t.n2_begin) * kv_head_bytes<kKind>(p.v, p.v_seqs, t.b);
    const auto* first = reinterpret_cast<const int64_t*>(base + l.chunk_first);
    slot_ = ifa_slot(l, base, first, t.b, n2, t.chunk, t.num_chunks);
    if constexpr (kKind == KvKind::kInt8) {
      // Per-channel fp32 antiquant tables of this kv head (prepared once per run).
      const auto* aq = reinterpret_cast<const float*>(base + l.antiquant);
      const int64_t nd = p.num_kv_heads * p.head_dim;
      k_sc_ = aq + n2 * p.head_dim;
      v_sc_ = aq + nd + n2 * p.head_dim;
      k_off_ = aq + 2 * nd + n2 * p.head_dim;
      v_off_ = aq + 3 * nd + n2 * p.head_dim;
    }
    const int64_t d = p.head_dim, dp = l.dp;
    for (int64_t g = 0; g < p.group; ++g) {
      float* acc = slot_ + g * l.head_floats;
      float* q = acc + dp;
      const int64_t h = n2 * p.group + g;
      for (int64_t i = 0; i < dp; i += kLanes) vstore(acc + i, vzero());
      load_query(p, data, t.b, h, q);
      for (int64_t i = d; i < dp; ++i) q[i] = 0.0f;
      if constexpr (kKind == KvKind::kInt8) {
        // q·((k + off) * sc) = (q * sc)·k + (q * sc)·off: the row dot products then run on the
        // raw integers, and the second term is one constant per head, added to each score.
        float bias = 0.0f;
        bool finite = true;
        for (int64_t i = 0; i < d; ++i) {
          q[i] *= k_sc_[i];
          bias += q[i] * k_off_[i];
          finite = finite && __builtin_isfinite(q[i]);
        }
        // With an infinite (q * sc)_i the folded form is not the spec's arithmetic (inf * 0 is
        // NaN where q·((k + off) * sc) has +-inf): such heads are scored term by term
        // (exact_scores), without the bias.
        exact_[g] = !finite || !__builtin_isfinite(bias);
        if (exact_[g]) {
          bias = 0.0f;
          any_exact_ = true;
        }
        acc[2 * dp + IfaHeadSlot::kKeyBias] = bias;
        if (p.token_k) {  // the tables are 1 and 0: q is unscaled, the bias 0
          float qsum = 0.0f;
          for (int64_t i = 0; i < d; ++i) qsum += q[i];
          acc[2 * dp + IfaHeadSlot::kQuerySum] = qsum;
        }
        acc[2 * dp + IfaHeadSlot::kValueConst] = 0.0f;
      }
      if constexpr (kKind != KvKind::kInt8) exact_[g] = false;
      st_[g] = SoftmaxState{};
      any_unmasked_[g] = false;
    }
    k_sdim_ = kv_dim_stride(p.k, p.k_seqs, t.b);
    v_sdim_ = kv_dim_stride(p.v, p.v_seqs, t.b);
    k_bytes_ = prefetch_bytes(k_sdim_);
    k_in_place_ = k_sdim_ == 1 && d == dp;
    if constexpr (kKind == KvKind::kBf16) {
      // qbf null: the tile engine scores (no bf16 query buffer, whatever the schedule says).
      k_bf16_dot_ = qbf != nullptr && k_in_place_ && dp % 32 == 0 &&
                    p.q.dtype == DType::kBFloat16 && t.bf16_dot;
      if (k_bf16_dot_) {
        // The fp32 queries were widened from bf16: their top halves are the bf16 bits.
        qbf_ = qbf;
        for (int64_t g = 0; g < p.group; ++g) {
          const float* q = slot_ + g * l.head_floats + dp;
          for (int64_t i = 0; i < dp; ++i) {
            uint32_t u;
            std::memcpy(&u, q + i, sizeof(u));
            qbf[g * dp + i] = static_cast<uint16_t>(u >> 16);
          }
        }
      }
    }
    v_bytes_ = prefetch_bytes(v_sdim_);
    v_in_place_ = v_sdim_ == 1 && d == dp;
  }

  // Prefetches the K and V rows of the first tile (rows as in `tile`); only K when prefetching
  // across the streams (its K pass prefetches its V rows).
  void prefetch_first(const TileRows& rows) const {
    for (int64_t i = 0; i < rows.n; ++i) {
      prefetch_row(rows.k[i] + k_head_off_, k_bytes_);
      if (!across_) prefetch_row(rows.v[i] + v_head_off_, v_bytes_);
    }
  }

  // The row prefetched while K row i of the tile is scored: V row i of this tile when
  // prefetching across the streams (IfaSchedule::prefetch_across), else K row i of the next tile
  // (never beyond the chunk). One row per row processed: spread out, so the prefetches never
  // pile up in the miss queues.
  void prefetch_while_scoring(const TileRows& rows, int64_t i) const {
    if (across_) {
      prefetch_row(rows.v[i] + v_head_off_, v_bytes_);
    } else if (i < rows.n_next) {
      prefetch_row(rows.k_next[i] + k_head_off_, k_bytes_);
    }
  }
  // The row prefetched while V row i of the tile is accumulated: row i of the next tile, K when
  // prefetching across the streams, else V.
  void prefetch_while_accumulating(const TileRows& rows, int64_t i) const {
    if (i >= rows.n_next) return;
    if (across_) {
      prefetch_row(rows.k_next[i] + k_head_off_, k_bytes_);
    } else {
      prefetch_row(rows.v_next[i] + v_head_off_, v_bytes_);
    }
  }

  // Scores of tile rows [i, i + kBlockRows) against every head into s[g][i ..], prefetching as
  // prefetch_while_scoring says. Contiguous rows of dp channels are read in place; others are
  // widened into buf first (kBlockRows fp32 rows, kIfaMaxHeadDim apart).
  void score_block_at(const TileRows& rows, int64_t i, float (*s)[kIfaTile], float* buf) const {
    const int64_t d = p_->head_dim, dp = l_->dp;
    const std::byte* k[kBlockRows];
    for (int64_t r = 0; r < kBlockRows; ++r) {
      prefetch_while_scoring(rows, i + r);
      k[r] = rows.k[i + r] + k_head_off_;
    }
    const float* q0 = slot_ + dp;
    if (k_bf16_dot_) {
      score_bf16_dot(qbf_, p_->group, dp, k, kBlockRows, s, i);
      return;
    }
    if (k_in_place_) {
      score_block<kKind>(q0, l_->head_floats, p_->group, dp, k, s, i);
      return;
    }
    for (int64_t r = 0; r < kBlockRows; ++r) {
      float* dst = buf + r * kIfaMaxHeadDim;
      load_row<kKind>(k[r], k_sdim_, d, dp, dst);
      k[r] = reinterpret_cast<const std::byte*>(dst);
    }
    score_block<KvKind::kF32>(q0, l_->head_floats, p_->group, dp, k, s, i);
  }

  // Scores of the single tile row i (the tail of a tile).
  void score_row_at(const TileRows& rows, int64_t i, float (*s)[kIfaTile], float* buf) const {
    const int64_t d = p_->head_dim, dp = l_->dp;
    prefetch_while_scoring(rows, i);
    const std::byte* k = rows.k[i] + k_head_off_;
    const float* q0 = slot_ + dp;
    if (k_bf16_dot_) {
      score_bf16_dot(qbf_, p_->group, dp, &k, 1, s, i);
      return;
    }
    if (k_in_place_) {
      score_row<kKind>(q0, l_->head_floats, p_->group, dp, k, s, i);
      return;
    }
    load_row<kKind>(k, k_sdim_, d, dp, buf);
    score_row<KvKind::kF32>(q0, l_->head_floats, p_->group, dp,
                            reinterpret_cast<const std::byte*>(buf), s, i);
  }

  // int8 K: the scores of the heads whose scaled query is not finite, recomputed term by term as
  // sum_i (q * sc)_i * (k_i + off_i), replacing the folded (q * sc)·k (see init). Rare: only
  // non-finite queries or scales get here.
  void exact_scores(const TileRows& rows, int64_t n, float (*s)[kIfaTile]) const {
    if constexpr (kKind == KvKind::kInt8) {
      if (!any_exact_) return;
      const int64_t d = p_->head_dim, dp = l_->dp, hf = l_->head_floats;
      for (int64_t g = 0; g < p_->group; ++g) {
        if (!exact_[g]) continue;
        const float* q = slot_ + g * hf + dp;
        for (int64_t i = 0; i < n; ++i) {
          const std::byte* row = rows.k[i] + k_head_off_;
          float acc = 0.0f;
          for (int64_t c = 0; c < d; ++c)
            acc += q[c] * (kv_scalar<kKind>(row, c * k_sdim_) + k_off_[c]);
          s[g][i] = acc;
        }
      }
    } else {
      (void)rows, (void)n, (void)s;
    }
  }

  // Scale, bias, mask (docs/semantics.md §2.5 steps 3-5) of the n scores of the tile at positions
  // [j0, ..), then folds them into each head's state: s becomes the weights p. Inlined into the
  // chunk loop as it was before the per-token paths made GCC keep it out of line (2 % more
  // instructions on the int8 path, callgrind at avx2).
  [[gnu::always_inline]] void fold(int64_t j0, int64_t n, float (*s)[kIfaTile]) {
    const IfaProblem& p = *p_;
    const int64_t group = p.group, dp = l_->dp, hf = l_->head_floats;
    const auto* mask = static_cast<const uint8_t*>(d_->mask);
    const int64_t n_vec = (n + kLanes - 1) / kLanes * kLanes;
    // Per-token int8 parameters of the tile's positions (scale, offset; key, value).
    [[maybe_unused]] float tok[4][kIfaTile];
    if constexpr (kKind == KvKind::kInt8) {
      if (p.token_k)
        token_params(p.antiquant_scale, p.antiquant_offset, d_->antiquant_scale,
                     d_->antiquant_offset, j0, n, tok[0], tok[1]);
      if (p.token_v)
        token_params(p.antiquant_scale_v, p.antiquant_offset_v, d_->antiquant_scale_v,
                     d_->antiquant_offset_v, j0, n, tok[2], tok[3]);
    }
    for (int64_t g = 0; g < group; ++g) {
      const int64_t h = n2_ * group + g;
      float* sg = s[g];
      if constexpr (kKind == KvKind::kInt8) {
        if (p.token_k) {
          // q·((k + off_j) * sc_j) = (q·k + off_j * sum_i q_i) * sc_j.
          const float qsum = slot_[g * hf + 2 * dp + IfaHeadSlot::kQuerySum];
          const Vec qv = vset1(qsum);
          int64_t i = 0;
          for (; i + kLanes <= n; i += kLanes)
            vstore(sg + i, vmul(vfma(vload(tok[1] + i), qv, vload(sg + i)), vload(tok[0] + i)));
          for (; i < n; ++i) sg[i] = __builtin_fmaf(tok[1][i], qsum, sg[i]) * tok[0][i];
        }
        const float bias = slot_[g * hf + 2 * dp + IfaHeadSlot::kKeyBias];
        const Vec bv = vset1(bias);
        int64_t i = 0;
        for (; i + kLanes <= n; i += kLanes) vstore(sg + i, vadd(vload(sg + i), bv));
        for (; i < n; ++i) sg[i] += bias;
      }
      if (!p.pse.present && mask == nullptr) {
        // The common case: only the scale (the same single rounding as the general path).
        const Vec scale = vset1(p.scale);
        int64_t i = 0;
        for (; i + kLanes <= n; i += kLanes) vstore(sg + i, vmul(vload(sg + i), scale));
        for (; i < n; ++i) sg[i] *= p.scale;
        any_unmasked_[g] = true;
      }
      for (int64_t i = 0; i < n && (p.pse.present || mask != nullptr); ++i) {
        const int64_t j = j0 + i;
        float x = sg[i] * p.scale;
        if (p.pse.present) x += view_f32(p.pse, d_->pse, p.pse.index(b_, h, j));
        if (mask != nullptr && mask[p.mask.index(b_, h, j)] != 0) {
          x = core::kMaskedScore;
        } else {
          any_unmasked_[g] = true;
        }
        sg[i] = x;
      }
      for (int64_t i = n; i < n_vec; ++i) sg[i] = kNegInf;
      const float alpha = softmax_fold_tile(st_[g], sg, n_vec);
      softmax_scale_acc(slot_ + g * hf, dp, alpha);
      if constexpr (kKind == KvKind::kInt8) {
        if (p.token_v) {
          // sum_t p_t (v_t + off_t) sc_t = sum_t (p_t sc_t) v_t + sum_t p_t sc_t off_t: the
          // weights take the scale, the constant is rescaled as acc is and added by finish().
          // The tile's part is summed in lanes, then reduced (a fixed order: the same bits for
          // any thread count).
          float& c = slot_[g * hf + 2 * dp + IfaHeadSlot::kValueConst];
          if (alpha != 1.0f) c *= alpha;
          Vec part = vzero();
          int64_t i = 0;
          for (; i + kLanes <= n; i += kLanes) {
            const Vec w = vmul(vload(sg + i), vload(tok[2] + i));
            vstore(sg + i, w);
            part = vfma(w, vload(tok[3] + i), part);
          }
          float tail = 0.0f;
          for (; i < n; ++i) {
            sg[i] *= tok[2][i];
            tail = __builtin_fmaf(sg[i], tok[3][i], tail);
          }
          c += vreduce_add(part) + tail;
        }
      }
    }
  }

  // acc_g += p_g[i] * v_i for tile rows [i0, i0 + m), m <= kPvRows: each V row widened once and
  // used by every head, each accumulator vector loaded and stored once per block; the FMAs still
  // run in row order, so the result is the same as one row at a time.
  void pv_block_at(const TileRows& rows, int64_t i0, int64_t m, float (*s)[kIfaTile],
                   float* buf) const {
    const int64_t d = p_->head_dim, dp = l_->dp, hf = l_->head_floats, group = p_->group;
    for (int64_t r = 0; r < m; ++r) prefetch_while_accumulating(rows, i0 + r);
    int64_t i = i0;
    if (v_in_place_) {
      // Contiguous rows of dp channels: four rows at a time straight from the cache.
      for (; i + 4 <= i0 + m; i += 4) {
        const std::byte* v[4];
        for (int64_t r = 0; r < 4; ++r) v[r] = rows.v[i + r] + v_head_off_;
        int64_t g = 0;
        if constexpr (kScoreHeads >= 4) {
          for (; g + 4 <= group; g += 4) pv_rows4_heads4<kKind>(slot_, hf, dp, s, g, i, v);
        }
        if constexpr (kScoreHeads >= 2) {
          for (; g + 2 <= group; g += 2) pv_rows4_heads2<kKind>(slot_, hf, dp, s, g, i, v);
        }
        for (; g < group; ++g) pv_rows4_head1<kKind>(slot_, hf, dp, s, g, i, v);
      }
    }
    const int64_t rest = i0 + m - i;
    if (rest == 0) return;
    for (int64_t r = 0; r < rest; ++r) {
      load_row<kKind>(rows.v[i + r] + v_head_off_, v_sdim_, d, dp, buf + r * kIfaMaxHeadDim);
    }
    for (int64_t g = 0; g < group; ++g) accumulate_pv(slot_ + g * hf, dp, s[g] + i, buf, rest);
  }

  // Per-token parameters of positions [j0, j0 + n) of this batch: sc[i], off[i] (0 without an
  // offset tensor).
  void token_params(const core::View3& scale, const core::View3& offset, const void* sd,
                    const void* od, int64_t j0, int64_t n, float* sc, float* off) const {
    param_run(scale, sd, j0, n, sc);
    if (offset.present) {
      param_run(offset, od, j0, n, off);
    } else {
      for (int64_t i = 0; i < n; ++i) off[i] = 0.0f;
    }
  }

  // dst[0, n) = elements (b, j0 + i, 0) of v, widened: kLanes at a time when positions are
  // contiguous (the usual (B, S) tensors), else one by one.
  void param_run(const core::View3& v, const void* data, int64_t j0, int64_t n, float* dst) const {
    const int64_t at = v.index(b_, j0, 0);
    int64_t i = 0;
    if (v.s1 == 1) {
      for (; i + kLanes <= n; i += kLanes) {
        if (v.dtype == DType::kFloat32) {
          vstore(dst + i, vload(static_cast<const float*>(data) + at + i));
        } else if (v.dtype == DType::kFloat16) {
          vstore(dst + i, vload_fp16(static_cast<const uint16_t*>(data) + at + i));
        } else {
          vstore(dst + i, vload_bf16(static_cast<const uint16_t*>(data) + at + i));
        }
      }
    }
    for (; i < n; ++i) dst[i] = param_f32(v.dtype, data, at + i * v.s1);
  }

  // Leaves (max, sum, any_unmasked) of each head in the slot for the merge.
  // int8 V: acc holds sum_t p_t v_t over the raw integers and st.sum = sum_t p_t (both with the
  // same rescales), so sum_t p_t (v_t + off) * sc = (acc + off * sum) * sc.
  void finish() {
    for (int64_t g = 0; g < p_->group; ++g) {
      if constexpr (kKind == KvKind::kInt8) {
        float* acc = slot_ + g * l_->head_floats;
        const int64_t d = p_->head_dim;
        if (p_->token_v) {  // no per-channel value parameters: the constant of fold()
          const float c = acc[2 * l_->dp + IfaHeadSlot::kValueConst];
          for (int64_t i = 0; i < d; ++i) acc[i] += c;
        } else {
          const float sum = st_[g].sum;
          const Vec sv = vset1(sum);
          int64_t i = 0;
          for (; i + kLanes <= d; i += kLanes) {
            vstore(acc + i, vmul(vfma(vload(v_off_ + i), sv, vload(acc + i)), vload(v_sc_ + i)));
          }
          for (; i < d; ++i) acc[i] = __builtin_fmaf(v_off_[i], sum, acc[i]) * v_sc_[i];
        }
      }
      float* hdr = slot_ + g * l_->head_floats + 2 * l_->dp;
      hdr[IfaHeadSlot::kMax] = st_[g].max;
      hdr[IfaHeadSlot::kSum] = st_[g].sum;
      hdr[IfaHeadSlot::kAnyUnmasked] = any_unmasked_[g] ? 1.0f : 0.0f;
    }
  }

 private:
  // The matrix-engine path (ifa_tiles-inl.h) scores and accumulates for these heads.
  template <class Engine, KvKind kTileKind>
  friend class TileChunk;

  // Bytes to prefetch of a row: all of it when its channels are contiguous, else the first line
  // (strided channels are a rare slow path).
  int64_t prefetch_bytes(int64_t s_dim) const {
    return s_dim == 1 ? p_->head_dim * kv_elem_size<kKind>() : 1;
  }

  // No default member initializers: chunk_impl keeps kIfaMaxGroup of these on its stack and
  // initialising them all cost about a quarter of a 16-token call (callgrind: a memset per task);
  // init() sets every member.
  const IfaProblem* p_;
  const IfaData* d_;
  const IfaLayout* l_;
  int64_t b_, n2_;
  int64_t k_sdim_, v_sdim_;
  int64_t k_bytes_, v_bytes_;
  bool k_in_place_;  // K rows are contiguous with dp channels: scored without a copy
  bool k_bf16_dot_;  // ... and scored with bf16 dot products against qbf_
  const uint16_t* qbf_;
  bool v_in_place_;  // the same for V rows
  int64_t k_head_off_, v_head_off_;
  SoftmaxState* st_;
  bool* any_unmasked_;
  float* slot_;
  const float* k_sc_;
  const float* v_sc_;
  const float* k_off_;
  const float* v_off_;
  bool exact_[kIfaMaxGroup];  // int8 K: heads [0, group) scored term by term (exact_scores)
  bool any_exact_;
  bool across_;  // IfaChunkTask::prefetch_across
};

// How many tiles ahead the rows of a stream are prefetched (K's, when prefetching across the
// streams: V rows are then prefetched during the K pass of their own tile).
inline constexpr int64_t kPrefetchTiles = 1;

// The engine a chunk task scores and accumulates on. NoTiles: the vector type, above. The matrix
// engine's (ifa_tiles-inl.h, compiled where KVFLASH_IFA_TILES is defined) replaces the score
// blocks and optionally P·V; the softmax fold, the int8 folding and the merge stay these.
struct NoTiles {
  static constexpr bool kOnTiles = false;
  static constexpr bool kPvOnTiles = false;
  /// What a task holds while it runs (the matrix engine's tile configuration).
  struct Scope {
    explicit Scope(int64_t) {}
  };
};
/// The matrix engine's per-task state (packed queries, staging): empty for NoTiles.
template <class Engine, KvKind kKind>
class TileChunk {
 public:
  void init(const IfaProblem&, const IfaLayout&, const KvHeadWork<kKind>*, int64_t) {}
};
#ifdef KVFLASH_IFA_TILES
#include "cpu/ifa/ifa_tiles-inl.h"
#endif

template <KvKind kKind, class Engine>
void chunk_impl(const IfaProblem& p, const IfaData& d, const IfaLayout& l, std::byte* base,
                const IfaChunkTask& t) {
  // At most kIfaMaxGroup query heads per task (ifa_schedule), so these fit.
  SoftmaxState st[kIfaMaxGroup];
  bool any_unmasked[kIfaMaxGroup];
  alignas(64) float buf[kPvRows * kIfaMaxHeadDim];  // kBlockRows K or kPvRows V rows
  alignas(64) float s[kIfaMaxGroup][kIfaTile];
  const int64_t num_kv = t.n2_end - t.n2_begin;
  const int64_t group = p.group;
  // bf16 queries for the bf16 dot path (kIfaMaxGroup * kIfaMaxHeadDim covers any task).
  constexpr bool kBf16Dot = kKind == KvKind::kBf16 && !Engine::kOnTiles;
  alignas(64) uint16_t qbf[kBf16Dot ? kIfaMaxGroup * kIfaMaxHeadDim : 1];
  KvHeadWork<kKind> work[kIfaMaxGroup];
  for (int64_t k = 0; k < num_kv; ++k) {
    work[k].init(p, d, l, base, t, t.n2_begin + k, st + k * group, any_unmasked + k * group,
                 kBf16Dot ? qbf + k * group * l.dp : nullptr);
  }
  TileChunk<Engine, kKind> tiles;
  tiles.init(p, l, work, num_kv);
  TileRows rows;
  for (int64_t j0 = t.begin; j0 < min_i64(t.end, t.begin + kPrefetchTiles * kIfaTile);
       j0 += kIfaTile) {
    rows.n = min_i64(kIfaTile, t.end - j0);
    kv_rows<kKind>(p, d, t.b, t.n2_begin, j0, rows.n, rows.k, rows.v);
    for (int64_t k = 0; k < num_kv; ++k) work[k].prefetch_first(rows);
  }
  for (int64_t j0 = t.begin; j0 < t.end; j0 += kIfaTile) {
    const int64_t n = min_i64(kIfaTile, t.end - j0);
    rows.n = n;
    kv_rows<kKind>(p, d, t.b, t.n2_begin, j0, n, rows.k, rows.v);
    const int64_t j_next = j0 + kPrefetchTiles * kIfaTile;
    rows.n_next = min_i64(kIfaTile, t.end - j_next);
    if (rows.n_next > 0) {
      kv_rows<kKind>(p, d, t.b, t.n2_begin, j_next, rows.n_next, rows.k_next, rows.v_next);
    }
    // Position-major across the task's kv heads: see KvHeadWork.
    if constexpr (Engine::kOnTiles) {
      for (int64_t k = 0; k < num_kv; ++k) tiles.score_tile(k, work[k], rows, s + k * group);
    } else {
      int64_t i = 0;
      for (; i + kBlockRows <= n; i += kBlockRows) {
        for (int64_t k = 0; k < num_kv; ++k) work[k].score_block_at(rows, i, s + k * group, buf);
      }
      for (; i < n; ++i) {
        for (int64_t k = 0; k < num_kv; ++k) work[k].score_row_at(rows, i, s + k * group, buf);
      }
    }
    for (int64_t k = 0; k < num_kv; ++k) work[k].exact_scores(rows, n, s + k * group);
    for (int64_t k = 0; k < num_kv; ++k) work[k].fold(j0, n, s + k * group);
    if constexpr (Engine::kPvOnTiles) {
      for (int64_t k = 0; k < num_kv; ++k) tiles.pv_tile(work[k], rows, s + k * group, buf);
    } else {
      for (int64_t i0 = 0; i0 < n; i0 += kPvRows) {
        const int64_t m = min_i64(kPvRows, n - i0);
        for (int64_t k = 0; k < num_kv; ++k) work[k].pv_block_at(rows, i0, m, s + k * group, buf);
      }
    }
  }
  for (int64_t k = 0; k < num_kv; ++k) work[k].finish();
}

// Writes o[0, d) (fp32, already normalised) as output row (b, h).
inline void write_row(const IfaProblem& p, const IfaData& dt, const IfaLayout& l,
                      const std::byte* base, int64_t b, int64_t h, const float* o) {
  const int64_t d = p.head_dim;
  const int64_t row = b * p.out_s0 + h * p.out_s1;
  if (p.out_dtype == DType::kInt8) {
    const auto* q2 = reinterpret_cast<const float*>(base + l.quant2);
    const float* qs = q2 + h * d;
    const float* qo = q2 + p.num_heads * d + h * d;
    auto* out = static_cast<int8_t*>(dt.out);
    for (int64_t i = 0; i < d; ++i) out[row + i * p.out_s2] = f32_to_int8_sat(o[i] * qs[i] + qo[i]);
    return;
  }
  if (p.out_dtype == DType::kFloat32) {  // kvflash extension: the fp32 result, unrounded
    auto* out = static_cast<float*>(dt.out);
    if (p.out_s2 == 1) {
      std::memcpy(out + row, o, static_cast<size_t>(d) * sizeof(float));
      return;
    }
    for (int64_t i = 0; i < d; ++i) out[row + i * p.out_s2] = o[i];
    return;
  }
  auto* out = static_cast<std::byte*>(dt.out);
  const bool fp16 = p.out_dtype == DType::kFloat16;
  int64_t i = 0;
  if (p.out_s2 == 1) {
    // Contiguous rows (the usual layouts): kLanes at a time, the same rounding as below. A
    // per-element loop here was about a third of a 16-token call (callgrind, see docs/perf-log.md).
    auto* o16 = reinterpret_cast<uint16_t*>(out) + row;
    for (; i + kLanes <= d; i += kLanes) {
      if (fp16) {
        vstore_fp16(o16 + i, vload(o + i));
      } else {
        vstore_bf16(o16 + i, vload(o + i));
      }
    }
  }
  for (; i < d; ++i) {
    const uint16_t bits = fp16 ? f32_to_fp16(o[i]) : f32_to_bf16(o[i]);
    std::memcpy(out + 2 * (row + i * p.out_s2), &bits, sizeof(bits));
  }
}

inline void write_lse(const IfaProblem& p, const IfaData& d, int64_t b, int64_t h, float lse) {
  if (d.lse != nullptr) d.lse[b * p.lse_s0 + h * p.lse_s1] = lse;
}

// The documented result of a batch whose device data was bad (core::IfaBatchState): NaN outputs
// (int8 output: 0, it has no NaN) and NaN LSE, so the rows cannot pass for results.
inline void write_fault_row(const IfaProblem& p, const IfaData& dt, int64_t b, int64_t h) {
  const int64_t row = b * p.out_s0 + h * p.out_s1;
  if (p.out_dtype == DType::kInt8) {
    auto* out = static_cast<int8_t*>(dt.out);
    for (int64_t i = 0; i < p.head_dim; ++i) out[row + i * p.out_s2] = 0;
  } else if (p.out_dtype == DType::kFloat32) {
    auto* out = static_cast<float*>(dt.out);
    for (int64_t i = 0; i < p.head_dim; ++i) out[row + i * p.out_s2] = __builtin_nanf("");
  } else {
    const uint16_t bits = p.out_dtype == DType::kFloat16 ? 0x7E00 : 0x7FC0;  // quiet NaN
    auto* out = static_cast<std::byte*>(dt.out);
    for (int64_t i = 0; i < p.head_dim; ++i) {
      std::memcpy(out + 2 * (row + i * p.out_s2), &bits, sizeof(bits));
    }
  }
  write_lse(p, dt, b, h, __builtin_nanf(""));
}

inline void merge_impl(const IfaProblem& p, const IfaData& dt, const IfaLayout& l, std::byte* base,
                       int64_t task) {
  const int64_t b = task / p.num_kv_heads, n2 = task % p.num_kv_heads;
  const int64_t group = p.group, dp = l.dp, hf = l.head_floats;
  const uint8_t state = dt.batch_state[b];
  if (state >= core::kIfaBatchFaultBlockId) {
    for (int64_t g = 0; g < group; ++g) write_fault_row(p, dt, b, n2 * group + g);
    return;
  }
  // An empty batch (left padding start < 0) ran no chunk task: it merges like kv_len 0.
  const int64_t num_chunks = state == core::kIfaBatchRun ? ifa_num_chunks(p.kv_len[b]) : 0;
  const auto* first = reinterpret_cast<const int64_t*>(base + l.chunk_first);
  alignas(64) float zeros[kIfaMaxHeadDim];  // filled only where a zero row is written (rare)
  for (int64_t g = 0; g < group; ++g) {
    const int64_t h = n2 * group + g;
    // Overall max (NaN if any part's is) and whether any attended position was unmasked.
    float m_total = kNegInf;
    bool any_unmasked = false;
    for (int64_t c = 0; c < num_chunks; ++c) {
      const float* hdr = ifa_slot(l, base, first, b, n2, c, num_chunks) + g * hf + 2 * dp;
      m_total = softmax_max_nan(m_total, hdr[IfaHeadSlot::kMax]);
      any_unmasked = any_unmasked || hdr[IfaHeadSlot::kAnyUnmasked] != 0.0f;
    }
    // Empty rows, and fully masked rows when asked: zeros. A row whose scores are all -inf is
    // not empty: it has no softmax and comes out NaN (softmax_final_sum), like NaN rows.
    if (num_chunks == 0 || (p.zero_fully_masked_rows && !any_unmasked)) {
      for (int64_t i = 0; i < p.head_dim; ++i) zeros[i] = 0.0f;
      write_row(p, dt, l, base, b, h, zeros);
      write_lse(p, dt, b, h, p.empty_lse);
      continue;
    }
    // Fixed-order log-sum-exp merge into chunk 0's accumulator. A part of weight 0 is still
    // added: 0 * NaN (or inf) in its accumulator must reach the output, as in the reference.
    float* acc = ifa_slot(l, base, first, b, n2, 0, num_chunks) + g * hf;
    SoftmaxState total{m_total, 0.0f};
    for (int64_t c = 0; c < num_chunks; ++c) {
      const float* part = ifa_slot(l, base, first, b, n2, c, num_chunks) + g * hf;
      const float w = softmax_merge_weight(part[2 * dp + IfaHeadSlot::kMax], m_total);
      total.sum += w * part[2 * dp + IfaHeadSlot::kSum];
      if (c == 0) {
        softmax_scale_acc(acc, dp, w);
      } else {
        const Vec wv = vset1(w);
        for (int64_t i = 0; i < dp; i += kLanes) {
          vstore(acc + i, vfma(wv, vload(part + i), vload(acc + i)));
        }
      }
    }
    total.sum = softmax_final_sum(total);
    // The sink joins the sum, not the max (FIA's D8: docs/fia-semantics.md).
    if (p.has_sink) total.sum += exp_scalar(param_f32(p.sink_dtype, dt.sink, h) - m_total);
    const Vec inv_div = vset1(total.sum);
    for (int64_t i = 0; i < dp; i += kLanes) vstore(acc + i, vdiv(vload(acc + i), inv_div));
    write_row(p, dt, l, base, b, h, acc);
    write_lse(p, dt, b, h, softmax_lse(total));
  }
}

}  // namespace ifa_detail

// Chunk task `task` on Engine (ifa_detail::NoTiles: the vector type; the matrix engine:
// ifa_tiles-inl.h).
template <class Engine>
void ifa_chunk_on(const core::IfaProblem& p, const core::IfaData& d, const IfaLayout& layout,
                  const IfaSchedule& schedule, std::byte* base, int64_t task) {
  using ifa_detail::KvKind;
  const IfaChunkTask t = ifa_chunk_task(p, d, layout, schedule, base, task);
  // A batch that is empty or whose device data was bad is never read (its merge writes it).
  if (d.batch_state[t.b] == core::kIfaBatchRun) {
    const typename Engine::Scope scope(p.group);
    switch (p.k.dtype) {
      case DType::kInt8:
        ifa_detail::chunk_impl<KvKind::kInt8, Engine>(p, d, layout, base, t);
        break;
      case DType::kBFloat16:
        ifa_detail::chunk_impl<KvKind::kBf16, Engine>(p, d, layout, base, t);
        break;
      default:
        ifa_detail::chunk_impl<KvKind::kFp16, Engine>(p, d, layout, base, t);
        break;
    }
  }
  // A sequence of one chunk is merged by its only chunk task, right after it (ifa_merged_by_chunk):
  // the same merge of the same slot, so the same bits, without a second pass over the pool.
  if (ifa_merged_by_chunk(p, t.b)) {
    for (int64_t n2 = t.n2_begin; n2 < t.n2_end; ++n2) {
      ifa_detail::merge_impl(p, d, layout, base, t.b * p.num_kv_heads + n2);
    }
  }
}

void ifa_chunk(const core::IfaProblem& p, const core::IfaData& d, const IfaLayout& layout,
               const IfaSchedule& schedule, std::byte* base, int64_t task) {
  ifa_chunk_on<ifa_detail::NoTiles>(p, d, layout, schedule, base, task);
}

void ifa_merge(const core::IfaProblem& p, const core::IfaData& d, const IfaLayout& layout,
               std::byte* base, int64_t task) {
  ifa_detail::merge_impl(p, d, layout, base, task);
}
