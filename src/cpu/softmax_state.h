// The online-softmax state of one query row and its -inf rules, written once for every attention
// kernel (IFA, SFA) and for the split-KV merge. No include guard on purpose: like simd_math-inl.h
// it is included inside each ISA namespace, after simd_<isa>.h and simd_math-inl.h.
//
// A row's state is (max, sum, acc[D]): max = the largest score folded in, sum = sum of
// exp(s - max), acc = sum of exp(s - max) * v. Rules that keep it NaN-free:
//  - the initial max is -inf and stays -inf while every score seen is -inf (sum and acc stay 0);
//  - scores are exponentiated against a pivot that is 0 while max is -inf, never -inf - -inf;
//  - a rescale from max -inf is exp(-inf) = 0 (and 0 * acc is exact because acc is 0);
//  - a rescale by exactly 1 is skipped, which does not change any bit.

inline constexpr float kNegInf = -__builtin_inff();

struct SoftmaxState {
  float max = kNegInf;
  float sum = 0.0f;
};

/// The value scores are exponentiated against: max, or 0 while max is -inf.
inline float softmax_pivot(float max) { return max == kNegInf ? 0.0f : max; }

/// Factor that moves a sum/accumulator from max m_old to max m_new >= m_old.
inline float softmax_rescale(float m_old, float m_new) {
  if (m_old == m_new) return 1.0f;   // also -inf == -inf: nothing accumulated yet
  return exp_scalar(m_old - m_new);  // m_old == -inf gives exp(-inf) = 0
}

/// Folds a tile of scores s[0, n) into st, n a multiple of kLanes (pad with -inf). Replaces each
/// score by its weight p = exp(s - pivot) (kept in fp32) and returns the factor the row's
/// accumulator must be multiplied by before the tile's p * v are added.
inline float softmax_fold_tile(SoftmaxState& st, float* s, int64_t n) {
  Vec mx = vset1(kNegInf);
  for (int64_t i = 0; i < n; i += kLanes) mx = vmax(mx, vload(s + i));
  float m_new = vreduce_max(mx);
  if (st.max > m_new) m_new = st.max;
  const float alpha = softmax_rescale(st.max, m_new);
  const Vec pivot = vset1(softmax_pivot(m_new));
  Vec sum = vzero();
  for (int64_t i = 0; i < n; i += kLanes) {
    const Vec p = vexp(vsub(vload(s + i), pivot));
    vstore(s + i, p);
    sum = vadd(sum, p);
  }
  st.sum = st.sum * alpha + vreduce_add(sum);
  st.max = m_new;
  return alpha;
}

/// acc[0, n) *= alpha, n a multiple of kLanes; a factor of exactly 1 is skipped.
inline void softmax_scale_acc(float* acc, int64_t n, float alpha) {
  if (alpha == 1.0f) return;
  const Vec a = vset1(alpha);
  for (int64_t i = 0; i < n; i += kLanes) vstore(acc + i, vmul(vload(acc + i), a));
}

/// Weight of a partial state with max m_part in a merge whose overall max is m_total (the max of
/// all parts): exp(m_part - m_total), and 0 for an empty part (m_part == -inf).
inline float softmax_merge_weight(float m_part, float m_total) {
  if (m_part == kNegInf) return 0.0f;
  return exp_scalar(m_part - m_total);
}

/// Natural-log sum-exp of a finished row: max + log(sum), or -inf for a row with nothing in it.
inline float softmax_lse(const SoftmaxState& st) {
  if (st.max == kNegInf || !(st.sum > 0.0f)) return kNegInf;
  return st.max + __builtin_logf(st.sum);
}
