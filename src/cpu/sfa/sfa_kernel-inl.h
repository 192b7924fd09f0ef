// The SFA kernel body, written once against a vector-traits type and compiled per ISA
// (sfa_kernel_{scalar,avx2,avx512}.cpp include it inside their own namespace with their flags;
// sfa_kernel_amx.cpp also defines KVFLASH_SFA_TILES for the matrix-engine half, sfa_tiles-inl.h,
// which then needs cpu/amx/amx_kernels.hpp and core/half.hpp at file scope).
//
// One task = one query row r and a block of heads [h0, h1). The row's selected KV tokens are
// streamed in tiles of kSfaTile positions in gather order; each tile is gathered once (fp32) and
// used by every head of the block as two small GEMMs:
//   S[h][t]  = (Q[h] . K[t]) * scale             (heads x 576) x (576 x tile)
//   O[h][:] += P[h][t] * V[t][:]                 (heads x tile) x (tile x 512)
// with an online softmax in fp32 (P stays fp32). Each (h, t) score has its own accumulator over d
// in a fixed order and each O[h][d] accumulates over t in gather order, so a head's result is the
// same whichever task, worker or head block computes it: output bits are thread-count independent.
// The positions of the next tile are computed one tile ahead and its rows prefetched into L2 while
// the current tile is gathered (random rows: the hardware prefetchers cannot guess them).
//
// Why P.V and Q.K stay fp32 FMAs on the avx512bf16 ISA too (unlike IFA's bf16 scores): on the
// Xeon this was measured on (family 6 model 207), vdpbf16ps zmm sustains about half the FLOP/s of
// fp32 FMAs (a register-only loop, thread CPU time: ~85 vs ~165 GFLOP/s), and a complete
// vdpbf16ps variant of this kernel (heads in lanes, P rounded to bf16; commit b1f0b69 on branch
// sfa-perf, docs/perf-log.md "SFA kernel, round 2") ran 0.6x the speed of this body at 128 heads.
//
// Include it only from a per-ISA translation unit, inside that ISA's namespace
// (kvflash::cpu::<isa>) after simd_<isa>.h, simd_math-inl.h and softmax_state.h (Vec, kLanes, v*,
// vexp, SoftmaxState), and after <cstring>, "ops/sfa/sfa_problem.hpp" and "cpu/sfa/sfa_kernel.hpp"
// at file scope.

namespace sfa_body {

using kvflash::DType;
using kvflash::core::SfaData;
using kvflash::core::SfaProblem;

constexpr int64_t kNope = SfaProblem::kNopeDim;
constexpr int64_t kRope = SfaProblem::kRopeDim;
constexpr int64_t kQk = kNope + kRope;  // 576: one dot product over nope then rope dims
// Register blocking: 4 heads x kTokRegs tokens of score accumulators, 4 heads x kDimRegs vectors of
// output accumulators. AVX-512 has 32 vector registers, so it takes 16 accumulators (two loads per
// four FMAs); AVX2's 16 registers hold 8 plus the operands. The blocking never changes a result:
// every (head, token) score and every (head, d) output keeps its own accumulation order.
constexpr int kHeadRegs = 4;
constexpr int kTokRegs = kLanes >= 16 ? 4 : 2;
constexpr int kDimRegs = kLanes >= 16 ? 4 : 2;
// Heads whose fp32 queries (16 x 576 x 4 bytes = 36 KiB) stay in L1 while a tile's rows pass.
constexpr int64_t kHeadChunk = 16;

static_assert(kQk % kLanes == 0 && kNope % (kLanes * kDimRegs) == 0 && kTokRegs <= 4);
static_assert(kvflash::cpu::kSfaTile % kLanes == 0);

using Scratch = kvflash::cpu::SfaScratch;

// Head h's online-softmax state in the scratch's (max, sum) pairs.
inline SoftmaxState& state(const Scratch& w, int64_t h) {
  return reinterpret_cast<SoftmaxState*>(w.st)[h];
}

inline float to_float(const void* base, DType dt, int64_t i) {
  const uint16_t h = static_cast<const uint16_t*>(base)[i];
  return dt == DType::kBFloat16 ? bf16_to_f32(h) : fp16_to_f32(h);
}

// n elements (n % kW == 0) at base + i*stride to fp32 dst.
inline void convert_row(const void* base, DType dt, int64_t stride, int64_t n, float* dst) {
  const uint16_t* src = static_cast<const uint16_t*>(base);
  if (stride == 1) {
    if (dt == DType::kBFloat16) {
      for (int64_t d = 0; d < n; d += kLanes) vstore(dst + d, vload_bf16(src + d));
    } else {
      for (int64_t d = 0; d < n; d += kLanes) vstore(dst + d, vload_fp16(src + d));
    }
    return;
  }
  for (int64_t d = 0; d < n; ++d) dst[d] = to_float(base, dt, d * stride);
}

inline void store_out(void* base, DType dt, int64_t i, float x) {
  if (dt == DType::kFloat32) {
    static_cast<float*>(base)[i] = x;
    return;
  }
  uint16_t* o = static_cast<uint16_t*>(base);
  o[i] = dt == DType::kBFloat16 ? f32_to_bf16(x) : f32_to_fp16(x);
}

// Address of element (b, j, d = 0) of a KV view bound at data, for batch b's logical token j.
inline const void* kv_row(const SfaProblem& p, const SfaData& d, const void* data,
                          const kvflash::core::SfaKvView& v, int64_t b, int64_t j) {
  int64_t off;
  if (p.paged) {
    const int64_t blk = d.block_table[b * p.bt_s0 + (j / p.block_size) * p.bt_s1];
    off = blk * v.s_block + (j % p.block_size) * v.s_pos;
  } else {
    off = b * v.s_batch + (d.batches[b].kv_row0 + j) * v.s_pos;
  }
  return static_cast<const uint16_t*>(data) + off;
}

// a[I], or zero past the end of a (the unused inputs of vreduce_add4).
template <int I, int N>
inline Vec or_zero(const Vec (&a)[N]) {
  if constexpr (I < N) {
    return a[I];
  } else {
    return vzero();
  }
}

// Scores of HR heads x TR tokens: every (h, t) accumulates q[h][d] * k[t][d] over d in order.
// The register-block loops are unrolled explicitly: left as loops, GCC keeps the accumulator
// arrays in memory (a load and a store around every FMA), which costs about 3x.
template <int HR, int TR>
inline void score_block(const float* q, const float* kt, int64_t tile, float scale, float* s) {
  Vec acc[HR][TR];
#pragma GCC unroll 16
  for (int h = 0; h < HR; ++h)
#pragma GCC unroll 16
    for (int t = 0; t < TR; ++t) acc[h][t] = vzero();
  for (int64_t d = 0; d < kQk; d += kLanes) {
    Vec kv[TR];
#pragma GCC unroll 16
    for (int t = 0; t < TR; ++t) kv[t] = vload(kt + t * kQk + d);
#pragma GCC unroll 16
    for (int h = 0; h < HR; ++h) {
      const Vec qv = vload(q + h * kQk + d);
#pragma GCC unroll 16
      for (int t = 0; t < TR; ++t) acc[h][t] = vfma(qv, kv[t], acc[h][t]);
    }
  }
  // Four horizontal sums at once (about half the shuffles of four vreduce_add). A score's sum
  // does not depend on the other three vectors, so a tail token (TR = 1) gets the same bits.
#pragma GCC unroll 16
  for (int h = 0; h < HR; ++h) {
    float sums[4];
    vreduce_add4(acc[h][0], or_zero<1>(acc[h]), or_zero<2>(acc[h]), or_zero<3>(acc[h]), sums);
#pragma GCC unroll 4
    for (int t = 0; t < TR; ++t) s[h * tile + t] = sums[t] * scale;
  }
}

// Scores of nh heads (q and s at the first one) against TR tokens (kt at the first one).
template <int TR>
inline void score_tokens(const float* q, const float* kt, int64_t nh, int64_t tile, float scale,
                         float* s) {
  int64_t h = 0;
  for (; h + kHeadRegs <= nh; h += kHeadRegs)
    score_block<kHeadRegs, TR>(q + h * kQk, kt, tile, scale, s + h * tile);
  for (; h < nh; ++h) score_block<1, TR>(q + h * kQk, kt, tile, scale, s + h * tile);
}

// acc[h][d, d + kLanes * kDimRegs) += sum over t (in order) of p[h][t] * v[t][...], for HR heads.
template <int HR>
inline void pv_chunk(const float* p, int64_t tile, const float* vt, int64_t v_stride, int64_t n,
                     float* acc, int64_t d) {
  Vec a[HR][kDimRegs];
#pragma GCC unroll 16
  for (int h = 0; h < HR; ++h)
#pragma GCC unroll 16
    for (int c = 0; c < kDimRegs; ++c) a[h][c] = vload(acc + h * kNope + d + c * kLanes);
  for (int64_t t = 0; t < n; ++t) {
    Vec v[kDimRegs];
#pragma GCC unroll 16
    for (int c = 0; c < kDimRegs; ++c) v[c] = vload(vt + t * v_stride + d + c * kLanes);
#pragma GCC unroll 16
    for (int h = 0; h < HR; ++h) {
      const Vec ph = vset1(p[h * tile + t]);
#pragma GCC unroll 16
      for (int c = 0; c < kDimRegs; ++c) a[h][c] = vfma(ph, v[c], a[h][c]);
    }
  }
#pragma GCC unroll 16
  for (int h = 0; h < HR; ++h)
#pragma GCC unroll 16
    for (int c = 0; c < kDimRegs; ++c) vstore(acc + h * kNope + d + c * kLanes, a[h][c]);
}

// Starts loading bytes at p into L2 (the rows of the next tile; see run_task).
inline void prefetch_bytes(const void* p, int64_t bytes) {
  const char* c = static_cast<const char*>(p);
  for (int64_t o = 0; o < bytes; o += 64) __builtin_prefetch(c + o, 0, 2);
  __builtin_prefetch(c + bytes - 1, 0, 2);
}

// Starts loading the K (and V) rows of selected position j into L2: the selection is random, so
// no hardware prefetcher can guess those rows (see gather_tile).
inline void prefetch_position(const SfaProblem& p, const SfaData& d, int64_t b, int64_t j) {
  prefetch_bytes(kv_row(p, d, d.k, p.k, b, j), 2 * kNope);
  prefetch_bytes(kv_row(p, d, d.k_rope, p.k_rope, b, j), 2 * kRope);
  if (!d.v_is_k) prefetch_bytes(kv_row(p, d, d.v, p.v, b, j), 2 * kNope);
}

// Gathers one tile of n selected positions (pos) as fp32 rows (w.kt, w.vt). While it gathers row
// t it starts loading row t of the next tile (next, n_next of them): one row per row gathered
// keeps the requests spread out instead of filling the load buffers in one burst.
inline void gather_tile(const SfaProblem& p, const SfaData& d, int64_t b, const int64_t* pos,
                        int64_t n, const int64_t* next, int64_t n_next, const Scratch& w) {
  const int64_t rows = n > n_next ? n : n_next;
  for (int64_t t = 0; t < rows; ++t) {
    if (t < n_next) prefetch_position(p, d, b, next[t]);
    if (t >= n) continue;
    const int64_t j = pos[t];
    convert_row(kv_row(p, d, d.k, p.k, b, j), p.dtype, p.k.s_dim, kNope, w.kt + t * kQk);
    convert_row(kv_row(p, d, d.k_rope, p.k_rope, b, j), p.dtype, p.k_rope.s_dim, kRope,
                w.kt + t * kQk + kNope);
    if (!d.v_is_k) {
      convert_row(kv_row(p, d, d.v, p.v, b, j), p.dtype, p.v.s_dim, kNope, w.vt + t * kNope);
    }
  }
}

// Scores of heads [0, nh) against the n gathered rows of w.kt into w.s, blocked for the caches: a
// chunk of kHeadChunk heads' queries (36 KiB of fp32) stays in L1 while the tile's gathered rows
// stream past it once per chunk. (Head blocks outermost would stream all 64 rows, 144 KiB, from L2
// once per 4 heads.)
inline void score_tile(const SfaProblem& p, int64_t nh, int64_t n, const Scratch& w) {
  constexpr int64_t tile = kvflash::cpu::kSfaTile;
  for (int64_t hc = 0; hc < nh; hc += kHeadChunk) {
    const int64_t hn = nh - hc < kHeadChunk ? nh - hc : kHeadChunk;
    const float* q = w.q + hc * kQk;
    float* s = w.s + hc * tile;
    int64_t t = 0;
    for (; t + kTokRegs <= n; t += kTokRegs)
      score_tokens<kTokRegs>(q, w.kt + t * kQk, hn, tile, p.scale, s + t);
    // The tail is shorter than kTokRegs; an int count tells GCC so (with an int64 induction it
    // warns that a 2^62-iteration loop would overflow the pointer arithmetic).
    const int tail = static_cast<int>(n - t);
    for (int i = 0; i < tail; ++i)
      score_tokens<1>(q, w.kt + (t + i) * kQk, hn, tile, p.scale, s + t + i);
  }
}

// Online softmax of the tile's n scores of heads [0, nh) (shared rules of softmax_state.h): P =
// exp(S - max) replaces S in w.s, in fp32, and each head's accumulator is rescaled. The tile is
// padded to whole vectors with -inf, whose weight is exactly 0.
inline void fold_tile(int64_t nh, int64_t n, const Scratch& w) {
  constexpr int64_t tile = kvflash::cpu::kSfaTile;
  const int64_t padded = (n + kLanes - 1) / kLanes * kLanes;
  for (int64_t h = 0; h < nh; ++h) {
    float* s = w.s + h * tile;
    for (int64_t t = n; t < padded; ++t) s[t] = kNegInf;
    const float alpha = softmax_fold_tile(state(w, h), s, padded);
    softmax_scale_acc(w.acc + h * kNope, kNope, alpha);
  }
}

// acc[h] += sum over t < n (in order) of s[h * kSfaTile + t] * v_t for heads [0, nh), v_t at
// vt + t * v_stride (fp32). The output columns are outermost: a column chunk of the tile's V rows
// (16 KiB with AVX-512) stays in L1 while every head uses it, and V streams from L2 once per
// tile instead of once per 4 heads.
inline void pv_rows(const float* s, int64_t nh, const float* vt, int64_t v_stride, int64_t n,
                    float* acc) {
  constexpr int64_t tile = kvflash::cpu::kSfaTile;
  for (int64_t c = 0; c < kNope; c += kLanes * kDimRegs) {
    int64_t h = 0;
    for (; h + kHeadRegs <= nh; h += kHeadRegs)
      pv_chunk<kHeadRegs>(s + h * tile, tile, vt, v_stride, n, acc + h * kNope, c);
    for (; h < nh; ++h) pv_chunk<1>(s + h * tile, tile, vt, v_stride, n, acc + h * kNope, c);
  }
}

// The engine a task scores and accumulates on. NoTiles: the vector type, above. The matrix
// engine's (sfa_tiles-inl.h, compiled where KVFLASH_SFA_TILES is defined) gathers, scores and
// accumulates on tiles; the softmax fold (fold_tile) and finish_row stay these.
struct NoTiles {
  static constexpr bool kOnTiles = false;
  /// What a task holds while it runs (the matrix engine's tile configuration).
  struct Scope {
    explicit Scope(int64_t) {}
  };
};
/// The matrix engine's per-task state (packed queries): empty for NoTiles.
template <class Engine>
class TileTask {
 public:
  void init(const SfaProblem&, int64_t, const Scratch&) {}
};
#ifdef KVFLASH_SFA_TILES
#include "cpu/amx/amx_avx512-inl.h"
#include "cpu/sfa/sfa_tiles-inl.h"
#endif

// Gathers, scores and accumulates one tile of n selected positions (pos) for heads [0, nh),
// prefetching the rows of the next tile (next, n_next of them).
template <class Engine>
inline void process_tile(const SfaProblem& p, const SfaData& d, int64_t b, int64_t nh,
                         const int64_t* pos, int64_t n, const int64_t* next, int64_t n_next,
                         const Scratch& w, TileTask<Engine>& tiles) {
  if constexpr (Engine::kOnTiles) {
    tiles.gather(p, d, b, pos, n, next, n_next, w);
    tiles.scores(p, nh, n, w);
    fold_tile(nh, n, w);
    tiles.pv(p, d, b, nh, pos, n, w);
  } else {
    gather_tile(p, d, b, pos, n, next, n_next, w);
    score_tile(p, nh, n, w);
    fold_tile(nh, n, w);
    pv_rows(w.s, nh, d.v_is_k ? w.kt : w.vt, d.v_is_k ? kQk : kNope, n, w.acc);
  }
}

// Writes value to every output element of row r, heads [h0, h1), and max/sum to the softmax
// outputs: zeros for invalid rows, NaN for rows whose device data was bad.
inline void write_row_value(const SfaProblem& p, const SfaData& d, int64_t r, int64_t h0,
                            int64_t h1, float value, float max_sum) {
  for (int64_t h = h0; h < h1; ++h) {
    for (int64_t i = 0; i < kNope; ++i) store_out(d.out, p.out_dtype, p.out.index(r, h, i), value);
    if (d.softmax_max != nullptr) {
      d.softmax_max[p.softmax_max.index(r, h, 0)] = max_sum;
      d.softmax_sum[p.softmax_sum.index(r, h, 0)] = max_sum;
    }
  }
}

// Normalises the accumulators of row r, heads [h0, h0 + nh), after its whole selection was
// folded in (sinks, empty selections, the final division) and writes the outputs.
inline void finish_row(const SfaProblem& p, const SfaData& d, int64_t r, int64_t h0, int64_t nh,
                       const Scratch& w, bool any_selected) {
  for (int64_t h = 0; h < nh; ++h) {
    SoftmaxState st = state(w, h);
    float* acc = w.acc + h * kNope;
    if (d.sinks != nullptr) {
      // The sink joins the max and the denominator but brings no value vector.
      const float sigma = d.sinks[(h0 + h) * p.sinks_s0];
      softmax_scale_acc(acc, kNope, softmax_fold_sink(st, sigma));
    } else if (!any_selected) {  // empty selection without a sink: zeros, max = sum = 0
      st.max = 0.0f;
      st.sum = 0.0f;
      std::memset(acc, 0, sizeof(float) * kNope);
    }
    const float m = st.max;
    float l = st.sum;
    if (d.sinks != nullptr || any_selected) {
      // Every score (and the sink) -inf: no softmax, NaN like the reference's exp(-inf - -inf).
      l = softmax_final_sum(st);
      const Vec den = vset1(l);
      for (int64_t i = 0; i < kNope; i += kLanes) vstore(acc + i, vdiv(vload(acc + i), den));
    }
    for (int64_t i = 0; i < kNope; ++i)
      store_out(d.out, p.out_dtype, p.out.index(r, h0 + h, i), acc[i]);
    if (d.softmax_max != nullptr) {
      d.softmax_max[p.softmax_max.index(r, h0 + h, 0)] = m;
      d.softmax_sum[p.softmax_sum.index(r, h0 + h, 0)] = l;
    }
  }
}

// Where the selection of a row stands: index entry k next, positions [j, end) of the current one.
struct Cursor {
  int64_t k = 0, j = 0, end = 0;
  bool done = false;
};

// The next (up to) kSfaTile selected positions of row r (batch b) into out: their count, or -1
// when a selected range uses a bad block id.
inline int64_t next_positions(const SfaProblem& p, const SfaData& d,
                              const kvflash::core::SfaRowLimits& lim, int64_t r, int64_t b,
                              Cursor& c, int64_t* out, bool& any_selected) {
  int64_t n = 0;
  while (n < kvflash::cpu::kSfaTile) {
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

// One task: query row r, heads [h0, h1).
template <class Engine>
inline void run_task(const SfaProblem& p, const SfaData& d, int64_t r, int64_t h0, int64_t h1,
                     const Scratch& w, uint8_t* row_fault) {
  const kvflash::core::SfaRowLimits lim = kvflash::core::sfa_row_limits(p, d, r);
  if (lim.invalid) {  // uncovered or causally invalid row: zeros and max = sum = 0, even with sinks
    write_row_value(p, d, r, h0, h1, 0.0f, 0.0f);
    return;
  }
  const int64_t b = d.rows[r].batch;
  const int64_t nh = h1 - h0;
  for (int64_t h = 0; h < nh; ++h) {
    convert_row(static_cast<const uint16_t*>(d.q) + p.q.index(r, h0 + h, 0), p.dtype, p.q.s_dim,
                kNope, w.q + h * kQk);
    convert_row(static_cast<const uint16_t*>(d.q_rope) + p.q_rope.index(r, h0 + h, 0), p.dtype,
                p.q_rope.s_dim, kRope, w.q + h * kQk + kNope);
    state(w, h) = SoftmaxState{};
  }
  std::memset(w.acc, 0, sizeof(float) * nh * kNope);
  TileTask<Engine> tiles;
  tiles.init(p, nh, w);

  // Stream the selection (docs/semantics.md §3.4 step 2) in gather order, kSfaTile positions at a
  // time, one tile ahead (so its rows can be prefetched). The block ids of a selected range are
  // checked before any of its rows is read: a bad one ends the row (NaN outputs, reported after the
  // run), whatever was accumulated.
  Cursor cur;
  bool any_selected = false;
  int64_t* now = w.pos;
  int64_t* next = w.pos + kvflash::cpu::kSfaTile;
  int64_t n = next_positions(p, d, lim, r, b, cur, now, any_selected);
  while (n > 0) {
    const int64_t n_next = next_positions(p, d, lim, r, b, cur, next, any_selected);
    if (n_next < 0) {
      n = -1;
      break;
    }
    process_tile<Engine>(p, d, b, nh, now, n, next, n_next, w, tiles);
    int64_t* const done = now;
    now = next;
    next = done;
    n = n_next;
  }
  if (n < 0) {
    row_fault[r] = 1;  // every task of row r finds the same entry and stores the same 1
    const float nan = __builtin_nanf("");
    write_row_value(p, d, r, h0, h1, nan, nan);
    return;
  }
  finish_row(p, d, r, h0, nh, w, any_selected);
}

// Runs task `task` of schedule sch with the participant's scratch w on Engine (NoTiles: the vector
// type; the matrix engine: sfa_tiles-inl.h). The parallel loop is driven from the ISA-neutral
// dispatcher, so no std::function or pool code is instantiated with this unit's ISA flags.
template <class Engine = NoTiles>
inline void run_one(const SfaProblem& p, const SfaData& d, const kvflash::cpu::SfaSchedule& sch,
                    const Scratch& w, uint8_t* row_fault, int64_t task) {
  const int64_t blocks = (p.num_heads + sch.head_block - 1) / sch.head_block;
  const int64_t r = task / blocks;
  const int64_t h0 = (task % blocks) * sch.head_block;
  const int64_t h1 = h0 + sch.head_block < p.num_heads ? h0 + sch.head_block : p.num_heads;
  const typename Engine::Scope scope(h1 - h0);
  run_task<Engine>(p, d, r, h0, h1, w, row_fault);
}

}  // namespace sfa_body
