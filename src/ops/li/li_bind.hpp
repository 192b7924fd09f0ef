// Binding one LightningIndexer run's tensors to a plan (see ops/sfa/sfa_bind.hpp): the match
// against the plan's metadata and the pointers. The lengths and the block table are read by the
// backend (src/cpu/li/li_kernel.cpp), in stream order.
#pragma once

#include <cstddef>

#include "kvflash/li.hpp"
#include "kvflash/status.hpp"
#include "ops/li/li_problem.hpp"

namespace kvflash::li {

/// args with every data pointer cleared, and sparse_values dropped without return_value (create
/// ignores it then, so runs do too): what a plan keeps of its creation arguments.
LightningIndexerArgs strip_data(const LightningIndexerArgs& args, const core::LiProblem& problem);

/// kInvalid unless args has plan's metadata (tensors' dtype, device, dims, strides and offset,
/// which optional tensors are present, the attributes; not num_threads); kNullPtr if a tensor
/// holding elements has no data.
Status check_matches_plan(const LightningIndexerArgs& plan, const LightningIndexerArgs& args);

/// Fills the pointers of d from args (matched). Host pointer arithmetic only.
void bind_data(const core::LiProblem& p, const LightningIndexerArgs& args, core::LiData* d);

/// "B=4 N=64 K=2048 rows=4 bf16 paged": p's shape for KVFLASH_VERBOSE=dispatch, into buf (size
/// bytes, truncated; no allocation).
void describe(const core::LiProblem& p, char* buf, size_t size);

}  // namespace kvflash::li
