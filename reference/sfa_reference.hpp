// The SparseFlashAttention oracle (docs/semantics.md §0.2 item 1, §3.3-3.4): a plain
// double-precision implementation that reads the user-level SfaArgs directly — layouts, prefix
// sums, the block table, strides and offsets — so it shares no code with the validator's
// normalisation (src/sfa/) or the kernels (src/cpu/). Every element is read through its view,
// scores are computed in double, the softmax is an exact two-pass one with the sink in the max and
// the denominator only. Non-finite inputs go through the plain IEEE arithmetic of those formulas,
// with a max that keeps NaN (docs/semantics.md §0.2 item 6).
//
// It assumes the arguments are valid (SfaPlan::create and check_run accepted them); it checks
// nothing.
#pragma once

#include <cstdint>
#include <vector>

#include "kvflash/sfa.hpp"

namespace kvflash::reference {

/// How a query row was produced.
enum class SfaRowKind : uint8_t {
  kNormal,     ///< at least one selected position
  kEmpty,      ///< valid row with an empty selection (also mode 0 with no KV tokens): zeros;
               ///< max = sink, sum = 1 (no sink: 0, 0)
  kInvalid,    ///< sparse_mode 3 row with thr <= 0: zeros, max = sum = 0 even with sinks
  kUncovered,  ///< beyond the batch's query length (BSND i >= lq_b, TND t >= asq[B-1]): zeros
};

/// The oracle's result. Rows are numbered like the query: BSND r = b*S1 + i, TND r = t. Element
/// (r, h, d) is at (r * num_heads + h) * 512 + d; (r, h) at r * num_heads + h.
struct SfaReference {
  int64_t num_rows = 0, num_heads = 0;
  static constexpr int64_t kHeadDim = 512;

  std::vector<double> attention;     ///< the output o in double
  std::vector<double> rounded;       ///< attention rounded once (RNE) to the query dtype
  std::vector<double> softmax_max;   ///< m (scaled, sink included)
  std::vector<double> softmax_sum;   ///< sum of exp(s - m), sink term included
  std::vector<double> v_absmax;      ///< per row: max finite |V| over the selected positions
                                     ///< (0 if none)
  std::vector<int64_t> selected;     ///< per row: number of selected positions (with duplicates)
  std::vector<SfaRowKind> row_kind;  ///< per row

  int64_t index(int64_t r, int64_t h, int64_t d) const {
    return (r * num_heads + h) * kHeadDim + d;
  }
  int64_t row(int64_t r, int64_t h) const { return r * num_heads + h; }
};

/// Computes the reference result of one SFA call.
SfaReference sfa_reference(const SfaArgs& args);

/// The selected KV positions of one query row (docs/semantics.md §3.4 step 2): the rules applied to
/// idx[0, K) with the visible prefix thr. Exposed for tests of the rules themselves.
std::vector<int64_t> sfa_reference_select(const std::vector<int32_t>& idx, int64_t thr,
                                          int64_t sparse_block_size);

}  // namespace kvflash::reference
