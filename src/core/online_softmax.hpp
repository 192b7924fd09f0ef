// The online softmax's scalar rules, written once for every kernel that folds scores or merges
// partial results: the CPU tile fold (src/cpu/softmax_state.h), the CPU split-KV merge
// (src/cpu/ifa/ifa_kernel-inl.h), the merge operator (src/cpu/merge/merge_kernel.cpp) and the CUDA
// kernels (src/cuda/ifa/ifa_kernel.cu, src/cuda/sfa/sfa_kernel.cu, src/cuda/sfa/sfa_mma.cu). Every
// function is KVFLASH_HD and takes its exp / log as a functor, so each caller keeps its own
// (the CPU's vectorised exp lane for lane, CUDA's expf), and the bits each backend had stay.
//
// A row's state is (max, sum, acc[D]): max = the largest score folded in, sum = sum of
// exp(s - max), acc = sum of exp(s - max) * v (acc is the caller's: vectors, registers, mma tiles).
//
// Empty parts. A part with nothing in it (a tile's -inf padding, a chunk whose scores are all
// -inf) must merge as the identity and never make NaN on its own:
//  - the initial max is -inf and stays -inf while every score seen is -inf (sum and acc stay 0);
//  - scores are exponentiated against a pivot that is 0 while max is -inf, never -inf - -inf;
//  - a rescale from max -inf is exp(-inf) = 0 (and 0 * acc is exact because acc is 0);
//  - a rescale by exactly 1 is skipped by the callers, which does not change any bit.
//
// Non-finite inputs (docs/semantics.md §0.2 item 6, docs/conventions.md "Non-finite inputs"). A
// finished row equals the reference's IEEE arithmetic of max, exp(s - max), sum and sum/acc:
//  - NaN score: max, sum, acc, LSE and the whole row are NaN. The max is kept NaN explicitly
//    (softmax_max_nan). x86 max returns its second operand when either is NaN, so the CPU's vector
//    max of a tile may drop a NaN score; such a score still has a NaN weight, so a NaN tile sum
//    with a max that is neither NaN nor +inf shows that one was dropped (softmax_tile_end).
//  - +inf score: max = +inf and its weight exp(inf - inf) = NaN, so sum, acc and the row are NaN
//    while max stays +inf (a tile whose max is +inf is asked for NaN scores, which win:
//    softmax_tile_begin).
//  - -inf score: weight exactly 0. A finished, non-empty row whose max is still -inf (every score
//    -inf) has no softmax: the reference's sum is exp(-inf - -inf) = NaN, and softmax_final_sum
//    reports that NaN (so the row and its LSE are NaN); an empty part inside a merge is still the
//    identity (softmax_merge_weight).
//  - NaN or inf in V: weights multiply it (0 * NaN = NaN, 0 * inf = NaN, as in the reference); no
//    step skips a zero weight. Only the columns it reaches are affected.
#pragma once
// What src/cpu/softmax_state.h checks for (it is included inside the ISA namespaces, so it cannot
// include this header itself).
#define KVFLASH_CORE_ONLINE_SOFTMAX 1

#include "core/hd.hpp"

namespace kvflash::core {

inline constexpr float kSoftmaxNegInf = -__builtin_inff();
inline constexpr float kSoftmaxPosInf = __builtin_inff();
/// The quiet NaN every rule produces (0x7fc00000, the bits the CPU outputs have always had).
inline constexpr float kSoftmaxNaN = __builtin_nanf("");

struct SoftmaxState {
  float max = kSoftmaxNegInf;
  float sum = 0.0f;
};

/// max(a, b) that is NaN when either is NaN.
KVFLASH_HD inline float softmax_max_nan(float a, float b) { return (a > b || a != a) ? a : b; }

/// The value scores are exponentiated against: max, or 0 while max is -inf.
KVFLASH_HD inline float softmax_pivot(float max) { return max == kSoftmaxNegInf ? 0.0f : max; }

/// Factor that moves a sum/accumulator from max m_old to max m_new >= m_old (NaN if either is).
template <class Exp>
KVFLASH_HD inline float softmax_rescale(float m_old, float m_new, Exp exp) {
  if (m_old == m_new) return 1.0f;  // also -inf == -inf: nothing accumulated yet
  return exp(m_old - m_new);        // m_old == -inf gives exp(-inf) = 0
}

/// The first half of folding a tile of scores into a state: the new max, the factor the row's
/// accumulator is multiplied by before the tile's p * v are added, and the pivot the tile's
/// weights p = exp(s - pivot) are taken against.
struct SoftmaxTile {
  float max, alpha, pivot;
};

/// tile_max is the tile's max as the caller reduced it (it may have dropped a NaN score);
/// any_nan() says whether the tile holds a NaN score and is called only when the max is +inf,
/// where a dropped NaN would otherwise go unnoticed (the +inf scores' weights are NaN too).
template <class Exp, class AnyNaN>
KVFLASH_HD inline SoftmaxTile softmax_tile_begin(const SoftmaxState& st, float tile_max,
                                                 AnyNaN any_nan, Exp exp) {
  float m_new = softmax_max_nan(st.max, tile_max);
  if (m_new == kSoftmaxPosInf && any_nan()) m_new = kSoftmaxNaN;
  return SoftmaxTile{m_new, softmax_rescale(st.max, m_new, exp), softmax_pivot(m_new)};
}

/// The second half, with the sum of the tile's weights: with a finite or -inf pivot every weight
/// is finite unless its score is NaN, so a NaN sum there marks a NaN score the max dropped.
KVFLASH_HD inline void softmax_tile_end(SoftmaxState& st, const SoftmaxTile& t, float tile_sum) {
  const float m_new = (tile_sum != tile_sum && t.max != kSoftmaxPosInf) ? kSoftmaxNaN : t.max;
  st.sum = st.sum * t.alpha + tile_sum;
  st.max = m_new;
}

/// Folds an SFA sink (a score with no value vector) into a row's state; returns the factor the
/// accumulator must be multiplied by. A NaN sink makes the row NaN; a +inf one makes the sum
/// exp(inf - inf) = NaN.
template <class Exp>
KVFLASH_HD inline float softmax_fold_sink(SoftmaxState& st, float sink, Exp exp) {
  const float ms = softmax_max_nan(st.max, sink);
  const float alpha = softmax_rescale(st.max, ms, exp);
  st.sum = st.sum * alpha + exp(sink - ms);
  st.max = ms;
  return alpha;
}

/// Weight of a partial state with max m_part in a log-sum-exp merge whose overall max is m_total
/// (the softmax_max_nan of all parts): exp(m_part - m_total), and 0 for an empty part
/// (m_part == -inf). The caller applies it even when it is 0, so NaN or inf in that part's
/// accumulator still shows.
template <class Exp>
KVFLASH_HD inline float softmax_merge_weight(float m_part, float m_total, Exp exp) {
  if (m_part == kSoftmaxNegInf) return 0.0f;
  return exp(m_part - m_total);
}

/// The denominator of a finished row that attended at least one position: its sum, except that a
/// max of -inf (every score -inf, and the sink if any) gives NaN, as exp(-inf - -inf) does in the
/// reference; the pivot of 0 left the sum at 0 there.
KVFLASH_HD inline float softmax_final_sum(float max, float sum) {
  return max == kSoftmaxNegInf ? kSoftmaxNaN : sum;
}

/// Natural-log sum-exp of a finished row (or merge) with overall max `max` and denominator `sum`:
/// max + log(sum), NaN when either is NaN. Empty rows are the caller's: -inf.
template <class Log>
KVFLASH_HD inline float softmax_lse(float max, float sum, Log log) {
  return max + log(sum);
}

#if defined(__CUDACC__)
/// CUDA's expf and logf as the rules' functors, for the device kernels.
struct DeviceExp {
  __host__ __device__ float operator()(float x) const { return expf(x); }
};
struct DeviceLog {
  __host__ __device__ float operator()(float x) const { return logf(x); }
};
#endif

}  // namespace kvflash::core
