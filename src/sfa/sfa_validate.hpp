// SFA argument validation: the only place that rejects SFA input (spec §3.5, §3.3).
#pragma once

#include "core/sfa_problem.hpp"
#include "kvflash/sfa.hpp"
#include "kvflash/status.hpp"

namespace kvflash::sfa {

inline constexpr const char* kOpName = "sparse_flash_attention";

/// Checks every rule of spec §3.5 and the length ranges of §3.3 (reading the actual-length
/// tensors), and fills *problem. Returns kNullPtr / kInvalid with a message through core::fail.
Status validate(const SfaArgs& args, core::SfaProblem* problem);

/// The phase-2 check of decision #13: every block-table entry used by a position that the current
/// sparse_indices select must be a block id in [0, num_blocks). Reads indices and block table.
Status check_block_ids(const core::SfaProblem& p);

}  // namespace kvflash::sfa
