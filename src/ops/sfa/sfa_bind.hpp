// Binding one SFA run's tensors to a plan (see ops/ifa/ifa_bind.hpp): the match against the plan's
// metadata, the pointers, and the per-batch lengths derived from the actual-length tensors.
#pragma once

#include "ops/sfa/sfa_problem.hpp"
#include "kvflash/sfa.hpp"
#include "kvflash/status.hpp"

namespace kvflash::sfa {

/// args with every data pointer cleared, and the softmax outputs dropped without
/// return_softmax_lse (create ignores them then, so runs do too): what a plan keeps of its
/// creation arguments.
SfaArgs strip_data(const SfaArgs& args, const core::SfaProblem& problem);

/// kInvalid unless args has plan's metadata (tensors' dtype, device, dims, strides and offset,
/// which optional tensors are present, the attributes; not num_threads); kNullPtr if a tensor
/// holding elements has no data.
Status check_matches_plan(const SfaArgs& plan, const SfaArgs& args);

/// Fills the pointers of d from args (matched). Host pointer arithmetic only.
void bind_data(const core::SfaProblem& p, const SfaArgs& args, core::SfaData* d);

/// Derives the per-batch lengths (B entries) and the row map (num_rows entries) from the
/// actual-length tensors bound in d, which it reads (docs/semantics.md §3.3;
/// core::sfa_resolve_lengths, which the CUDA prologue runs too). kInvalid, naming the tensor and
/// entry (sfa::sfa_fault_message), when a value is out of range: a count outside [0, S1] /
/// [0, S2] / [0, capacity], a decreasing prefix sum, or a last prefix beyond T1 / T2.
Status resolve_lengths(const core::SfaProblem& p, const core::SfaData& d, core::SfaBatch* batches,
                       core::SfaRow* rows);

/// "B=1 N=128 K=2048 rows=4 fp16 paged": p's shape for KVFLASH_VERBOSE=dispatch, into buf (size
/// bytes, truncated; no allocation).
void describe(const core::SfaProblem& p, char* buf, size_t size);

}  // namespace kvflash::sfa
