// IFA kernel body: the P·V micro-kernels.
// Included only by ifa_kernel-inl.h, inside the ISA namespace and after the parts before it
// (no include guard, like it: compiled once per ISA, with that unit's flags).
//
// acc += p · V over a block of V rows: fp32 rows from the staging buffer (accumulate_pv, kPvRows
// at a time), or contiguous rows widened in registers straight from the cache (pv_rows4_heads4,
// pv_rows4_heads2, pv_rows4_head1: 4 rows against 4, 2 or 1 heads). Each accumulator element takes
// its FMAs in row order in every variant, so the blocking never changes a bit.
// KvHeadWork::pv_block_at picks the kernel.

namespace ifa_detail {

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

}  // namespace ifa_detail
