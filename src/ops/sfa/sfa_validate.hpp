// SFA argument validation: the only place that rejects SFA input (docs/semantics.md §3.5, §3.3).
#pragma once

#include "ops/sfa/sfa_problem.hpp"
#include "kvflash/sfa.hpp"
#include "kvflash/status.hpp"

namespace kvflash::sfa {

inline constexpr const char* kOpName = "sparse_flash_attention";

/// Checks every rule of docs/semantics.md §3.5 on the arguments' metadata and fills *problem. Reads
/// no tensor: the actual lengths, indices and block table are device data, read by the run
/// (sfa::resolve_lengths in sfa_bind.hpp, and the kernels). Returns kNullPtr / kInvalid with a
/// message through core::fail.
Status validate(const SfaArgs& args, core::SfaProblem* problem);

}  // namespace kvflash::sfa
