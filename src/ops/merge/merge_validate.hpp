// merge_attention_states: argument validation (the only place that rejects merge input), the
// plan's copy of the arguments, the match of a run against it, and the binding of its pointers.
#pragma once

#include "ops/merge/merge_problem.hpp"
#include "kvflash/merge.hpp"
#include "kvflash/status.hpp"

namespace kvflash::merge {

inline constexpr const char* kOpName = "merge_attention_states";

/// Checks the arguments' metadata (required tensors, dtypes, shapes, contiguous outputs, devices,
/// view geometry) and fills *problem. Reads no tensor.
Status validate(const MergeArgs& args, core::MergeProblem* problem);

/// args with every data pointer cleared: what a plan keeps of its creation arguments.
MergeArgs strip_data(const MergeArgs& args, const core::MergeProblem& problem);

/// kInvalid unless args has plan's metadata (every tensor's layout, which optional tensors are
/// present; not num_threads, which must be >= 0); kNullPtr if a tensor holding elements has no
/// data.
Status check_matches_plan(const MergeArgs& plan, const MergeArgs& args);

/// The pointers of one (matched) run.
void bind_data(const core::MergeProblem& p, const MergeArgs& args, core::MergeData* d);

/// "K=3 rows=7 D=40 fp32->fp16": p's shape for KVFLASH_VERBOSE=dispatch, into buf (size bytes,
/// truncated; no allocation).
void describe(const core::MergeProblem& p, char* buf, size_t size);

}  // namespace kvflash::merge
