// The SFA kernel's AVX512-BF16 path: bf16 query, KV and output (sfa_bf16_path). Included by
// sfa_kernel_avx512.cpp only, inside kvflash::cpu::avx512 after sfa_kernel-inl.h (it reuses that
// body's helpers: kv_row, state, write_row_value, finish_row). Every function that executes an
// AVX512-BF16 instruction carries the target attribute, so the unit keeps its AVX-512 flags and
// the dispatcher only calls this path where the CPU has the extension (Isa::kAvx512Bf16).
//
// Why it is faster than the fp32 body: vdpbf16ps does 32 multiply-adds of bf16 pairs per
// instruction (twice an fp32 FMA) and reads bf16 directly, so nothing is widened or gathered:
//  - Q.K with heads in the vector lanes: acc[t][16 heads] += qp[pair][16 heads] . bcast(K pair of
//    token t). The query is packed once per task as bf16 pairs with heads innermost; the K rows
//    are read where they lie in the cache (a 4-byte broadcast per pair and token), so the gathered
//    rows are never copied or transposed for the scores. One 16x16 transpose per 16 heads x 16
//    tokens turns the scores back into per-head rows for the (shared) online softmax.
//  - P.V with d in the lanes: acc[h][16 d] += bcast(P pair of head h) . vp[token pair][16 d]. The
//    tile's V rows are interleaved into pairs of consecutive tokens once (shared by every head);
//    P is rounded to bf16 (spec §0.2 item 2 allows rounding P to the KV dtype; only bf16 output
//    takes this path, whose tolerance is 2^-7 relative plus 2^-7 max|V|, while the rounding of
//    P adds at most 2^-9 max|V|).
// Numerics: the products of bf16 pairs are exact in fp32; each score lane sums its 288 pairs in
// a fixed order, each output lane its token pairs in gather order, so a head's bits depend
// neither on the head block nor on the thread count. vdpbf16ps and vcvtneps2bf16 flush values
// below 2^-126 to zero (negligible next to the tolerance). The scale, online softmax, sinks and
// final division are those of the fp32 body (softmax_state.h), applied to the same fp32 scores.
//
// The rows of the next tile are gathered (their block ids checked) and prefetched into L2 while
// the current tile computes: the selection is random, so no hardware prefetcher can guess it.

namespace sfa_bf16 {

using kvflash::core::SfaData;
using kvflash::core::SfaProblem;
using Scratch = kvflash::cpu::SfaScratch;
using sfa_body::kNope;
using sfa_body::kQk;
using sfa_body::kRope;

constexpr int64_t kTile = kvflash::cpu::kSfaTile;
constexpr int64_t kNopePairs = kNope / 2;
constexpr int64_t kRopePairs = kRope / 2;
constexpr int64_t kQkPairs = kQk / 2;
// Register blocking. Scores: 2 head vectors x 8 tokens (16 accumulators: enough to cover the
// latency of two vdpbf16ps per cycle; 10 loads per 16 instructions), or 1 x 16 when the task has
// only 16 heads. Outputs: 4 heads x 4 vectors of d (4 + 4 loads per 16 instructions).
constexpr int kTokBlock = 8;
constexpr int kPvHeads = 4;
constexpr int kPvVecs = 4;
static_assert(kTile % 16 == 0 && 16 * kPvVecs == 64 && kNope % 64 == 0);

// Stands in for the rows of tokens past the end of a partial tile (never attended: their scores
// are replaced by -inf, their weights are 0, and 0 * 0 keeps the sums exact).
alignas(64) inline constexpr uint16_t kZeroRow[kNope] = {};

#define KVFLASH_SFA_BF16 __attribute__((target("avx512bf16")))

inline uint32_t load_pair(const uint16_t* p) {
  uint32_t x;
  std::memcpy(&x, p, sizeof x);  // any alignment, no aliasing question
  return x;
}
KVFLASH_SFA_BF16 inline __m512bh bh(__m512i x) { return (__m512bh)x; }  // reinterpretation
KVFLASH_SFA_BF16 inline __m512bh bcast_pair(uint32_t x) { return bh(_mm512_set1_epi32(static_cast<int>(x))); }

// The packed query is cut into panels of kPanelHeads heads (the last one may have 16): panel
// heads [c, c + width) hold (q[h][2i], q[h][2i+1]) at qp[c * 288 + i * width + (h - c)]. A panel
// is contiguous (36 KiB), so it stays in L1 while the scores of a tile use it; with one row of
// all hp heads per pair, the 288 rows a block reads would be hp * 4 bytes apart and fall into a
// few L1 sets (associativity misses on every load).
constexpr int64_t kPanelHeads = 32;
inline int64_t panel_width(int64_t c, int64_t hp) {
  return hp - c < kPanelHeads ? hp - c : kPanelHeads;
}

// Packs the task's heads as above, zero for the padding heads [nh, hp).
inline void pack_query(const SfaProblem& p, const SfaData& d, int64_t r, int64_t h0, int64_t nh,
                       int64_t hp, uint32_t* qp) {
  std::memset(qp, 0, sizeof(uint32_t) * kQkPairs * hp);
  for (int64_t h = 0; h < nh; ++h) {
    const uint16_t* qn = static_cast<const uint16_t*>(d.q) + p.q.index(r, h0 + h, 0);
    const uint16_t* qr = static_cast<const uint16_t*>(d.q_rope) + p.q_rope.index(r, h0 + h, 0);
    const int64_t c = h / kPanelHeads * kPanelHeads;
    const int64_t width = panel_width(c, hp);
    uint32_t* panel = qp + c * kQkPairs + (h - c);
    for (int64_t i = 0; i < kNopePairs; ++i) panel[i * width] = load_pair(qn + 2 * i);
    for (int64_t i = 0; i < kRopePairs; ++i) panel[(kNopePairs + i) * width] = load_pair(qr + 2 * i);
  }
}

// st[t * hp + j * 16 + lane] = scale * q[head] . k[t] for HV head vectors (a query panel of
// width 16 * HV) and TT tokens (rows kn, kr).
template <int HV, int TT>
KVFLASH_SFA_BF16 inline void score_block(const uint32_t* qp, int64_t hp,
                                         const uint16_t* const* kn, const uint16_t* const* kr,
                                         float scale, float* st) {
  __m512 acc[TT][HV];
#pragma GCC unroll 16
  for (int t = 0; t < TT; ++t)
#pragma GCC unroll 4
    for (int j = 0; j < HV; ++j) acc[t][j] = _mm512_setzero_ps();
  // The nope pairs then the rope pairs: one sum over the 576 dims, in this fixed order.
  for (int64_t i = 0; i < kNopePairs; ++i) {
    __m512bh q[HV];
#pragma GCC unroll 4
    for (int j = 0; j < HV; ++j) q[j] = bh(_mm512_loadu_si512(qp + i * (16 * HV) + j * 16));
#pragma GCC unroll 16
    for (int t = 0; t < TT; ++t) {
      const __m512bh k = bcast_pair(load_pair(kn[t] + 2 * i));
#pragma GCC unroll 4
      for (int j = 0; j < HV; ++j) acc[t][j] = _mm512_dpbf16_ps(acc[t][j], q[j], k);
    }
  }
  for (int64_t i = 0; i < kRopePairs; ++i) {
    __m512bh q[HV];
#pragma GCC unroll 4
    for (int j = 0; j < HV; ++j)
      q[j] = bh(_mm512_loadu_si512(qp + (kNopePairs + i) * (16 * HV) + j * 16));
#pragma GCC unroll 16
    for (int t = 0; t < TT; ++t) {
      const __m512bh k = bcast_pair(load_pair(kr[t] + 2 * i));
#pragma GCC unroll 4
      for (int j = 0; j < HV; ++j) acc[t][j] = _mm512_dpbf16_ps(acc[t][j], q[j], k);
    }
  }
  const __m512 sc = _mm512_set1_ps(scale);
#pragma GCC unroll 16
  for (int t = 0; t < TT; ++t)
#pragma GCC unroll 4
    for (int j = 0; j < HV; ++j) _mm512_storeu_ps(st + t * hp + j * 16, _mm512_mul_ps(acc[t][j], sc));
}

// Scores of the tile's nt tokens (a multiple of 16) for all hp heads into st_t[t][h]. Query
// panels go outermost so a panel (36 KiB) stays in L1 while the tile's rows stream past it.
KVFLASH_SFA_BF16 void score_tile(const uint32_t* qp, int64_t hp, const uint16_t* const* kn,
                                 const uint16_t* const* kr, int64_t nt, float scale, float* st) {
  const int64_t hvs = hp / 16;
  int64_t hv = 0;
  for (; hv + 2 <= hvs; hv += 2) {
    for (int64_t t = 0; t < nt; t += kTokBlock)
      score_block<2, kTokBlock>(qp + hv * 16 * kQkPairs, hp, kn + t, kr + t, scale,
                                st + t * hp + hv * 16);
  }
  if (hv < hvs) {
    for (int64_t t = 0; t < nt; t += 2 * kTokBlock)
      score_block<1, 2 * kTokBlock>(qp + hv * 16 * kQkPairs, hp, kn + t, kr + t, scale,
                                    st + t * hp + hv * 16);
  }
}

// In-register transpose of a 16 x 16 block of floats: r[i][j] becomes r[j][i].
inline void transpose16(__m512 r[16]) {
  __m512 t[16], u[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  const auto pd = [](__m512 x) { return _mm512_castps_pd(x); };
  for (int g = 0; g < 16; g += 4) {
    u[g] = _mm512_castpd_ps(_mm512_unpacklo_pd(pd(t[g]), pd(t[g + 2])));
    u[g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(pd(t[g]), pd(t[g + 2])));
    u[g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(pd(t[g + 1]), pd(t[g + 3])));
    u[g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(pd(t[g + 1]), pd(t[g + 3])));
  }
  // u[4g + k], 128-bit lane L, holds column 4L + k of rows 4g .. 4g + 3.
  for (int k = 0; k < 4; ++k) {
    const __m512 v0 = _mm512_shuffle_f32x4(u[k], u[4 + k], 0x88);
    const __m512 v1 = _mm512_shuffle_f32x4(u[k], u[4 + k], 0xdd);
    const __m512 w0 = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], 0x88);
    const __m512 w1 = _mm512_shuffle_f32x4(u[8 + k], u[12 + k], 0xdd);
    r[k] = _mm512_shuffle_f32x4(v0, w0, 0x88);
    r[8 + k] = _mm512_shuffle_f32x4(v0, w0, 0xdd);
    r[4 + k] = _mm512_shuffle_f32x4(v1, w1, 0x88);
    r[12 + k] = _mm512_shuffle_f32x4(v1, w1, 0xdd);
  }
}

// s[h][t] = st[t][h] for the task's nh heads and nt tokens (a multiple of 16).
inline void transpose_scores(const float* st, int64_t hp, int64_t nh, int64_t nt, float* s) {
  for (int64_t hv = 0; hv < hp; hv += 16) {
    for (int64_t t = 0; t < nt; t += 16) {
      __m512 r[16];
      for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(st + (t + i) * hp + hv);
      transpose16(r);
      for (int i = 0; i < 16 && hv + i < nh; ++i) _mm512_storeu_ps(s + (hv + i) * kTile + t, r[i]);
    }
  }
}

// (v[2tp][d], v[2tp+1][d]) for the tile's token pairs (rows vr, nt of them), in chunks of 64 d:
// vp[(d / 64) * kChunk + tp * 64 + d % 64], so that the pairs one output block reads (4 vectors
// of each token pair) are contiguous (8 KiB) rather than 2 KiB apart in a few L1 sets.
constexpr int64_t kChunk = (kTile / 2) * 16 * kPvVecs;
KVFLASH_SFA_BF16 void pack_values(const uint16_t* const* vr, int64_t nt, uint32_t* vp) {
  // Words 0..15 of a (lanes 2i) interleaved with words 0..15 of b (lanes 2i + 1); the second
  // index does the same for words 16..31.
  alignas(64) uint16_t lo[32], hi[32];
  for (int i = 0; i < 16; ++i) {
    lo[2 * i] = static_cast<uint16_t>(i), lo[2 * i + 1] = static_cast<uint16_t>(32 + i);
    hi[2 * i] = static_cast<uint16_t>(16 + i), hi[2 * i + 1] = static_cast<uint16_t>(48 + i);
  }
  const __m512i ilo = _mm512_load_si512(lo), ihi = _mm512_load_si512(hi);
  for (int64_t tp = 0; tp < nt / 2; ++tp) {
    const uint16_t* a = vr[2 * tp];
    const uint16_t* b = vr[2 * tp + 1];
    for (int64_t c = 0; c < kNope; c += 32) {
      uint32_t* o = vp + c / 64 * kChunk + tp * 64 + c % 64;
      const __m512i x = _mm512_loadu_si512(a + c), y = _mm512_loadu_si512(b + c);
      _mm512_storeu_si512(o, _mm512_permutex2var_epi16(x, ilo, y));
      _mm512_storeu_si512(o + 16, _mm512_permutex2var_epi16(x, ihi, y));
    }
  }
}

// acc[h][:] = acc[h][:] * alpha[h] + sum over token pairs (in order) of P pair . V pair, for HR
// heads (pp rows of kTile bf16 weights, acc rows of 512).
template <int HR>
KVFLASH_SFA_BF16 inline void pv_block(const uint16_t* pp, const uint32_t* vp, int64_t np,
                                      const float* alpha, float* acc) {
  for (int64_t d = 0; d < kNope; d += 16 * kPvVecs) {
    __m512 a[HR][kPvVecs];
#pragma GCC unroll 4
    for (int h = 0; h < HR; ++h) {
      // The rescale of softmax_scale_acc, folded into the load (a factor of 1 changes no bit).
      const __m512 al = _mm512_set1_ps(alpha[h]);
#pragma GCC unroll 4
      for (int c = 0; c < kPvVecs; ++c)
        a[h][c] = _mm512_mul_ps(_mm512_loadu_ps(acc + h * kNope + d + c * 16), al);
    }
    for (int64_t tp = 0; tp < np; ++tp) {
      __m512bh v[kPvVecs];
#pragma GCC unroll 4
      for (int c = 0; c < kPvVecs; ++c)
        v[c] = bh(_mm512_loadu_si512(vp + d / 64 * kChunk + tp * 64 + c * 16));
#pragma GCC unroll 4
      for (int h = 0; h < HR; ++h) {
        const __m512bh w = bcast_pair(load_pair(pp + h * kTile + 2 * tp));
#pragma GCC unroll 4
        for (int c = 0; c < kPvVecs; ++c) a[h][c] = _mm512_dpbf16_ps(a[h][c], w, v[c]);
      }
    }
#pragma GCC unroll 4
    for (int h = 0; h < HR; ++h)
#pragma GCC unroll 4
      for (int c = 0; c < kPvVecs; ++c) _mm512_storeu_ps(acc + h * kNope + d + c * 16, a[h][c]);
  }
}

// One tile of n selected positions (pos) for the task's nh heads.
KVFLASH_SFA_BF16 void process_tile(const SfaProblem& p, const SfaData& d, int64_t b, int64_t nh,
                                   int64_t hp, const int64_t* pos, int64_t n, const Scratch& w) {
  const uint16_t* kn[kTile];
  const uint16_t* kr[kTile];
  const uint16_t* vr[kTile];
  const int64_t nt = (n + 15) / 16 * 16;
  for (int64_t t = 0; t < nt; ++t) {
    if (t < n) {
      kn[t] = static_cast<const uint16_t*>(sfa_body::kv_row(p, d, d.k, p.k, b, pos[t]));
      kr[t] = static_cast<const uint16_t*>(sfa_body::kv_row(p, d, d.k_rope, p.k_rope, b, pos[t]));
      vr[t] = d.v_is_k ? kn[t] : static_cast<const uint16_t*>(sfa_body::kv_row(p, d, d.v, p.v, b, pos[t]));
    } else {
      kn[t] = kr[t] = vr[t] = kZeroRow;
    }
  }
  score_tile(w.qp, hp, kn, kr, nt, p.scale, w.st_t);
  pack_values(vr, nt, w.vp);
  transpose_scores(w.st_t, hp, nh, nt, w.s);

  // The online softmax of the fp32 body on each head's row (padded with -inf: weight 0), then
  // the weights rounded to bf16 pairs for P.V.
  for (int64_t h = 0; h < nh; ++h) {
    float* s = w.s + h * kTile;
    for (int64_t t = n; t < nt; ++t) s[t] = kNegInf;
    w.alpha[h] = softmax_fold_tile(sfa_body::state(w, h), s, nt);
    for (int64_t t = 0; t < nt; t += 16) {
      const __m256bh x = _mm512_cvtneps_pbh(_mm512_loadu_ps(s + t));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(w.pp + h * kTile + t), (__m256i)x);
    }
  }
  const int64_t np = (n + 1) / 2;
  int64_t h = 0;
  for (; h + kPvHeads <= nh; h += kPvHeads)
    pv_block<kPvHeads>(w.pp + h * kTile, w.vp, np, w.alpha + h, w.acc + h * kNope);
  for (; h < nh; ++h) pv_block<1>(w.pp + h * kTile, w.vp, np, w.alpha + h, w.acc + h * kNope);
}

// Where the selection of a row stands: index entry k next, positions [j, end) of the current one.
struct Cursor {
  int64_t k = 0, j = 0, end = 0;
  bool done = false;
};

// The next (up to) kTile selected positions of row r into out; their count, or -1 when a selected
// range uses a bad block id (checked before any row of it is read, as in the fp32 body).
inline int64_t next_positions(const SfaProblem& p, const SfaData& d,
                              const kvflash::core::SfaRowLimits& lim, int64_t r, int64_t b,
                              Cursor& c, int64_t* out, bool& any_selected) {
  int64_t n = 0;
  while (n < kTile) {
    if (c.j < c.end) {
      out[n++] = c.j++;
      continue;
    }
    if (c.done || c.k >= lim.valid_count) {
      c.done = true;
      break;
    }
    int64_t begin, end;
    if (!kvflash::core::sfa_selected_range(d.indices[p.indices.index(r, 0, c.k)],
                                           p.sparse_block_size, lim.thr, &begin, &end)) {
      c.done = true;
      break;
    }
    ++c.k;
    if (p.paged && begin < end && kvflash::core::sfa_bad_slot(p, d, b, begin, end) >= 0) return -1;
    any_selected = any_selected || begin < end;
    c.j = begin;
    c.end = end;
  }
  return n;
}

inline void prefetch_bytes(const void* p, int64_t bytes) {
  const char* c = static_cast<const char*>(p);
  for (int64_t o = 0; o < bytes; o += 64) _mm_prefetch(c + o, _MM_HINT_T1);
  _mm_prefetch(c + bytes - 1, _MM_HINT_T1);
}

// Starts loading the rows of n positions into L2.
inline void prefetch_rows(const SfaProblem& p, const SfaData& d, int64_t b, const int64_t* pos,
                          int64_t n) {
  for (int64_t t = 0; t < n; ++t) {
    prefetch_bytes(sfa_body::kv_row(p, d, d.k, p.k, b, pos[t]), 2 * kNope);
    prefetch_bytes(sfa_body::kv_row(p, d, d.k_rope, p.k_rope, b, pos[t]), 2 * kRope);
    if (!d.v_is_k) prefetch_bytes(sfa_body::kv_row(p, d, d.v, p.v, b, pos[t]), 2 * kNope);
  }
}

// One task: query row r, heads [h0, h1) (the fp32 body's run_task, with this path's tiles).
KVFLASH_SFA_BF16 void run_task(const SfaProblem& p, const SfaData& d, int64_t r, int64_t h0,
                               int64_t h1, const Scratch& w, uint8_t* row_fault) {
  const kvflash::core::SfaRowLimits lim = kvflash::core::sfa_row_limits(p, d, r);
  if (lim.invalid) {
    sfa_body::write_row_value(p, d, r, h0, h1, 0.0f, 0.0f);
    return;
  }
  const int64_t b = d.rows[r].batch;
  const int64_t nh = h1 - h0;
  const int64_t hp = (nh + 15) / 16 * 16;
  pack_query(p, d, r, h0, nh, hp, w.qp);
  for (int64_t h = 0; h < nh; ++h) sfa_body::state(w, h) = SoftmaxState{};
  std::memset(w.acc, 0, sizeof(float) * nh * kNope);

  Cursor cur;
  bool any_selected = false;
  int64_t* now = w.pos;
  int64_t* next = w.pos + kTile;
  int64_t n = next_positions(p, d, lim, r, b, cur, now, any_selected);
  while (n > 0) {
    const int64_t n_next = next_positions(p, d, lim, r, b, cur, next, any_selected);
    if (n_next < 0) {
      n = -1;
      break;
    }
    prefetch_rows(p, d, b, next, n_next);
    process_tile(p, d, b, nh, hp, now, n, w);
    std::swap(now, next);
    n = n_next;
  }
  if (n < 0) {
    row_fault[r] = 1;  // every task of row r finds the same entry and stores the same 1
    const float nan = __builtin_nanf("");
    sfa_body::write_row_value(p, d, r, h0, h1, nan, nan);
    return;
  }
  sfa_body::finish_row(p, d, r, h0, nh, w, any_selected);
}

KVFLASH_SFA_BF16 void run_one(const SfaProblem& p, const SfaData& d,
                              const kvflash::cpu::SfaSchedule& sch, const Scratch& w,
                              uint8_t* row_fault, int64_t task) {
  const int64_t blocks = (p.num_heads + sch.head_block - 1) / sch.head_block;
  const int64_t r = task / blocks;
  const int64_t h0 = (task % blocks) * sch.head_block;
  const int64_t h1 = h0 + sch.head_block < p.num_heads ? h0 + sch.head_block : p.num_heads;
  run_task(p, d, r, h0, h1, w, row_fault);
}

#undef KVFLASH_SFA_BF16

}  // namespace sfa_bf16
