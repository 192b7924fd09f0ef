// The LightningIndexer comparator: an operator's sparse_indices / sparse_values against the fp64
// reference, every slot of every row checked (docs/lightning_indexer.md, "Tolerances").
//
// An fp32 evaluation of a score differs from the exact one by at most
//   tol(j) = (D + N1 + 2) * 2^-24 * 1.01 * magnitude(j) + 2^-100,
// magnitude(j) = sum_h |w_h| sum_d |q_hd k_jd| (the reference's), whatever the summation order
// (products of fp16 / bf16 are exact in fp32; D - 1 roundings of the dot, one of the weight
// product, N1 - 1 of the head sum; the absolute term covers vdpbf16ps's flush of results below
// 2^-126). So key a is *clearly above* key b when their classes differ (NaN > +inf > finite >
// -inf) or both are finite and score(a) - tol(a) > score(b) + tol(b). The checks:
//   - rows without a selection (empty, padding, faulted) are all -1; values -inf (faulted: NaN);
//   - a normal row with n valid keys has min(n, K) distinct indices in [0, n), then -1 / -inf;
//   - no unselected key is clearly above a selected one, and no key is clearly above one that
//     comes before it in the output (near ties may come in either order);
//   - keys with exactly equal reference scores (bitwise equal inputs; both NaN; both +-inf):
//     the lower index is selected and output first (D9's tie rule, exact on every evaluation);
//   - values (return_value): equal to the reference's rounding of the selected key's score, or
//     within 2u |s| + (1 + 2u) tol(j) of it (u = 2^-8 bf16, 2^-11 fp16, plus its least subnormal;
//     fp32 values, the C++ API's unrounded scores: u = 0).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "li_reference.hpp"

namespace kvflash::testing {

/// What a comparison saw (for reports): the worst value error as a fraction of its allowance,
/// adjacent output pairs in the opposite order of the reference scores (accepted near ties), and
/// the rows checked by kind.
struct LiCompareStats {
  double worst_value_ratio = 0.0;
  int64_t near_tie_swaps = 0;
  int64_t normal_rows = 0, other_rows = 0, slots = 0;
};

/// Checks call's sparse_indices (and sparse_values when return_value) against ref. A reference
/// without any normal row fails unless expect_mostly_empty (such a case proves little).
::testing::AssertionResult compare_li_output(const std::string& name, const reference::LiCall& call,
                                             const reference::LiReference& ref,
                                             bool expect_mostly_empty,
                                             LiCompareStats* stats = nullptr);

/// The per-key error bound above.
double li_score_tolerance(double magnitude, int64_t num_heads);

}  // namespace kvflash::testing
