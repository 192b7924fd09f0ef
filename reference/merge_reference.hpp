// The merge_attention_states oracle (docs/semantics.md §0.2 item 1 applied to kvflash/merge.hpp): a
// plain double-precision implementation that reads MergeArgs' views directly (strides, offsets, any
// row rank), widens every input exactly, and applies the merge formula in double with IEEE
// arithmetic, a max that keeps NaN, and the documented empty-part and empty-row rules. It shares
// no code with the validator or the kernel and assumes the arguments are valid.
#pragma once

#include <cstdint>
#include <vector>

#include "kvflash/merge.hpp"

namespace kvflash::reference {

struct MergeReference {
  int64_t num_rows = 0, head_dim = 0;
  std::vector<double> out;       ///< (r, d) at r * head_dim + d, before rounding
  std::vector<double> rounded;   ///< out rounded once to the output dtype (RNE)
  std::vector<double> lse;       ///< per row: M + log(L); -inf for rows with nothing
  std::vector<double> max, sum;  ///< per row: M and L; 0 and 0 for rows with nothing
  /// Per row: max finite |o_k| over the non-empty parts (the scale of the output's error).
  std::vector<double> out_absmax;
  /// Per row: whether any part (or the sink) contributed.
  std::vector<bool> nonempty;
};

MergeReference merge_reference(const MergeArgs& args);

}  // namespace kvflash::reference
