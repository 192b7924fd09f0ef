// Binding one run's tensors to a plan: the check that they describe the plan's problem, and the
// pointers every backend reads them through. Host arithmetic on pointers only: nothing here reads
// a tensor, so it serves device memory as well.
#pragma once

#include "ops/ifa/ifa_problem.hpp"
#include "kvflash/ifa.hpp"
#include "kvflash/status.hpp"

namespace kvflash::ifa {

/// args with every data pointer cleared, and kv_padding_size dropped when the plan does not use it
/// (create ignores it then, so runs do too): what a plan keeps of its creation arguments.
IfaArgs strip_data(const IfaArgs& args, const core::IfaProblem& problem);

/// kInvalid unless args has plan's metadata (every tensor's dtype, device, dims, strides and
/// offset, which optional tensors are present, the attributes and actual_seq_lengths; not
/// num_threads); kNullPtr if a tensor holding elements has no data. The message names the
/// argument.
Status check_matches_plan(const IfaArgs& plan, const IfaArgs& args);

/// Fills the pointers of d from args (matched): element 0 of every present view of p. Non-paged
/// problems also get K/V batch bases, written to k_seq / v_seq (p.batch entries each).
void bind_data(const core::IfaProblem& p, const IfaArgs& args, const void** k_seq,
               const void** v_seq, core::IfaData* d);

}  // namespace kvflash::ifa
