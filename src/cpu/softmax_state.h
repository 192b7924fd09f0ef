// The CPU's vector half of the online softmax: folding a tile of scores and rescaling an
// accumulator, on the thin vector type. Every scalar decision (the NaN-keeping max, the pivot,
// the rescale, the non-finite rules, the merge weight, the final sum and LSE) is
// core/online_softmax.hpp's, which the CUDA kernels share; this file supplies the exp they take.
// No include guard on purpose: like simd_math-inl.h it is included inside each ISA namespace,
// after simd_<isa>.h and simd_math-inl.h, in a translation unit that includes
// core/online_softmax.hpp first.
#ifndef KVFLASH_CORE_ONLINE_SOFTMAX
#error "include core/online_softmax.hpp before the ISA namespace that includes softmax_state.h"
#endif

inline constexpr float kNegInf = core::kSoftmaxNegInf;
inline constexpr float kPosInf = core::kSoftmaxPosInf;
inline constexpr float kNaNf = core::kSoftmaxNaN;

using core::SoftmaxState;

/// The exp of every scalar rule: lane 0 of the vector exp, so a rescale factor has the bits the
/// vector path would give it.
struct SoftmaxExp {
  float operator()(float x) const { return exp_scalar(x); }
};
/// The log of an LSE.
struct SoftmaxLog {
  float operator()(float x) const { return __builtin_logf(x); }
};

// The rules of core/online_softmax.hpp with this exp and log, under the names the CPU kernels use.
using core::softmax_max_nan;
inline float softmax_fold_sink(SoftmaxState& st, float sink) {
  return core::softmax_fold_sink(st, sink, SoftmaxExp{});
}
inline float softmax_merge_weight(float m_part, float m_total) {
  return core::softmax_merge_weight(m_part, m_total, SoftmaxExp{});
}
inline float softmax_final_sum(const SoftmaxState& st) {
  return core::softmax_final_sum(st.max, st.sum);
}
inline float softmax_lse(float max, float sum) { return core::softmax_lse(max, sum, SoftmaxLog{}); }
inline float softmax_lse(const SoftmaxState& st) { return softmax_lse(st.max, st.sum); }

/// Whether any of s[0, n) is NaN (the rare path of softmax_fold_tile).
inline bool softmax_any_nan(const float* s, int64_t n) {
  bool nan = false;
  for (int64_t i = 0; i < n; ++i) nan = nan || s[i] != s[i];
  return nan;
}

/// Folds a tile of scores s[0, n) into st, n a multiple of kLanes (pad with -inf). Replaces each
/// score by its weight p = exp(s - pivot) (kept in fp32) and returns the factor the row's
/// accumulator must be multiplied by before the tile's p * v are added.
inline float softmax_fold_tile(SoftmaxState& st, float* s, int64_t n) {
  Vec mx = vset1(kNegInf);
  for (int64_t i = 0; i < n; i += kLanes) mx = vmax(mx, vload(s + i));
  // vmax / vreduce_max may drop a NaN score: softmax_tile_end catches it through its weight, and
  // a +inf max looks at the scores themselves.
  const core::SoftmaxTile t = core::softmax_tile_begin(
      st, vreduce_max(mx), [s, n] { return softmax_any_nan(s, n); }, SoftmaxExp{});
  const Vec pivot = vset1(t.pivot);
  Vec sum = vzero();
  for (int64_t i = 0; i < n; i += kLanes) {
    const Vec p = vexp(vsub(vload(s + i), pivot));
    vstore(s + i, p);
    sum = vadd(sum, p);
  }
  core::softmax_tile_end(st, t, vreduce_add(sum));
  return t.alpha;
}

/// acc[0, n) *= alpha, n a multiple of kLanes; a factor of exactly 1 is skipped.
inline void softmax_scale_acc(float* acc, int64_t n, float alpha) {
  if (alpha == 1.0f) return;
  const Vec a = vset1(alpha);
  for (int64_t i = 0; i < n; i += kLanes) vstore(acc + i, vmul(vload(acc + i), a));
}
