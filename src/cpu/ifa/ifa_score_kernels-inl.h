// IFA kernel body: the QK micro-kernels.
// Included only by ifa_kernel-inl.h, inside the ISA namespace and after the parts before it
// (no include guard, like it: compiled once per ISA, with that unit's flags).
//
// Register blocks that score kBlockRows K rows against 1, 2 or 4 query heads at once (score_block
// takes as many heads as the ISA's registers hold, kScoreHeads), one row for a tile's tail
// (score_row), and bf16 K against a bf16 query with AVX512-BF16 dot products (score_bf16_dot, in
// units that define KVFLASH_IFA_BF16_DOT). The fp32 variants sum each (row, head) in one order, so
// the head blocking never changes a bit; the bf16 dots sum in another, which depends only on the
// active ISA. KvHeadWork (ifa_kv_head_work-inl.h) picks the kernel per tile.

namespace ifa_detail {

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

}  // namespace ifa_detail
