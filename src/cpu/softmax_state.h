// The online-softmax state of one query row and its non-finite rules, written once for every
// attention kernel (IFA, SFA) and for the split-KV merge. No include guard on purpose: like
// simd_math-inl.h it is included inside each ISA namespace, after simd_<isa>.h and simd_math-inl.h.
//
// A row's state is (max, sum, acc[D]): max = the largest score folded in, sum = sum of
// exp(s - max), acc = sum of exp(s - max) * v.
//
// Empty parts. A part with nothing in it (a tile's -inf padding, a chunk whose scores are all
// -inf) must merge as the identity and never make NaN on its own:
//  - the initial max is -inf and stays -inf while every score seen is -inf (sum and acc stay 0);
//  - scores are exponentiated against a pivot that is 0 while max is -inf, never -inf - -inf;
//  - a rescale from max -inf is exp(-inf) = 0 (and 0 * acc is exact because acc is 0);
//  - a rescale by exactly 1 is skipped, which does not change any bit.
//
// Non-finite inputs (docs/semantics.md §0.2 item 6, docs/conventions.md "Non-finite inputs"). A finished row
// equals the reference's IEEE arithmetic of max, exp(s - max), sum and sum/acc:
//  - NaN score: max, sum, acc, LSE and the whole row are NaN. The max is kept NaN explicitly
//    (softmax_max_nan): x86 max returns its second operand when either is NaN, so the vector max
//    of a tile may drop a NaN score; such a score still has a NaN weight, so a NaN tile sum with a
//    max that is neither NaN nor +inf shows that one was dropped (one scalar test per tile).
//  - +inf score: max = +inf and its weight exp(inf - inf) = NaN, so sum, acc and the row are NaN
//    while max stays +inf (a tile whose max is +inf is scanned for NaN scores, which win).
//  - -inf score: weight exactly 0. A finished, non-empty row whose max is still -inf (every score
//    -inf) has no softmax: the reference's sum is exp(-inf - -inf) = NaN, and softmax_final_sum
//    reports that NaN (so the row and its LSE are NaN); an empty part inside a merge is still the
//    identity.
//  - NaN or inf in V: weights multiply it (0 * NaN = NaN, 0 * inf = NaN, as in the reference); no
//    step skips a zero weight. Only the columns it reaches are affected.

inline constexpr float kNegInf = -__builtin_inff();
inline constexpr float kPosInf = __builtin_inff();
inline constexpr float kNaNf = __builtin_nanf("");

struct SoftmaxState {
  float max = kNegInf;
  float sum = 0.0f;
};

/// max(a, b) that is NaN when either is NaN.
inline float softmax_max_nan(float a, float b) { return (a > b || a != a) ? a : b; }

/// The value scores are exponentiated against: max, or 0 while max is -inf.
inline float softmax_pivot(float max) { return max == kNegInf ? 0.0f : max; }

/// Factor that moves a sum/accumulator from max m_old to max m_new >= m_old (NaN if either is).
inline float softmax_rescale(float m_old, float m_new) {
  if (m_old == m_new) return 1.0f;   // also -inf == -inf: nothing accumulated yet
  return exp_scalar(m_old - m_new);  // m_old == -inf gives exp(-inf) = 0
}

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
  // vmax / vreduce_max may drop a NaN score; it is caught below through its weight.
  float m_new = softmax_max_nan(st.max, vreduce_max(mx));
  // A +inf max makes the +inf scores' weights NaN too, so the check below could not tell them
  // from NaN scores: look at the scores themselves (only when some score is +inf).
  if (m_new == kPosInf && softmax_any_nan(s, n)) m_new = kNaNf;
  const float alpha = softmax_rescale(st.max, m_new);
  const Vec pivot = vset1(softmax_pivot(m_new));
  Vec sum = vzero();
  for (int64_t i = 0; i < n; i += kLanes) {
    const Vec p = vexp(vsub(vload(s + i), pivot));
    vstore(s + i, p);
    sum = vadd(sum, p);
  }
  const float tile_sum = vreduce_add(sum);
  // With a finite or -inf pivot every weight is finite unless its score is NaN.
  if (tile_sum != tile_sum && m_new != kPosInf) m_new = kNaNf;
  st.sum = st.sum * alpha + tile_sum;
  st.max = m_new;
  return alpha;
}

/// acc[0, n) *= alpha, n a multiple of kLanes; a factor of exactly 1 is skipped.
inline void softmax_scale_acc(float* acc, int64_t n, float alpha) {
  if (alpha == 1.0f) return;
  const Vec a = vset1(alpha);
  for (int64_t i = 0; i < n; i += kLanes) vstore(acc + i, vmul(vload(acc + i), a));
}

/// Weight of a partial state with max m_part in a merge whose overall max is m_total (the
/// NaN-keeping max of all parts): exp(m_part - m_total), and 0 for an empty part (m_part == -inf).
/// The caller applies it even when it is 0, so NaN or inf in that part's accumulator still shows.
inline float softmax_merge_weight(float m_part, float m_total) {
  if (m_part == kNegInf) return 0.0f;
  return exp_scalar(m_part - m_total);
}

/// The denominator of a finished row that attended at least one position: its sum, except that a
/// max of -inf (every score -inf, and the sink if any) gives NaN, as exp(-inf - -inf) does in the
/// reference; the kernels' pivot of 0 left the sum at 0 there.
inline float softmax_final_sum(const SoftmaxState& st) {
  return st.max == kNegInf ? kNaNf : st.sum;
}

/// Natural-log sum-exp of a finished row that attended at least one position, with its sum from
/// softmax_final_sum: max + log(sum) (NaN when either is NaN). Empty rows are the caller's: -inf.
inline float softmax_lse(const SoftmaxState& st) { return st.max + __builtin_logf(st.sum); }
