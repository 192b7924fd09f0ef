// IFA kernel body: the chunk task's loop.
// Included only by ifa_kernel-inl.h, inside the ISA namespace and after the parts before it
// (no include guard, like it: compiled once per ISA, with that unit's flags).
//
// chunk_impl runs one task (a chunk of one sequence for a few adjacent kv heads) tile by tile,
// each tile position-major across the task's kv heads (KvHeadWork), on an engine: NoTiles, the
// vector micro-kernels, or the matrix engine. The matrix engine (ifa_tiles-inl.h, after the
// AVX-512 helpers it shares with SFA's, cpu/amx/amx_avx512-inl.h) is included here, where the unit
// defines KVFLASH_IFA_TILES, because its TileChunk specialises the one declared below and
// chunk_impl instantiates it.

namespace ifa_detail {

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
#include "cpu/amx/amx_avx512-inl.h"
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

}  // namespace ifa_detail
