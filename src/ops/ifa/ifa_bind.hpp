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

/// Fills the pointers of d from args (matched): element 0 of every present view of p; the
/// derived fields stay null.
void bind_data(const core::IfaProblem& p, const IfaArgs& args, core::IfaData* d);

/// Where batch b's rows of a non-paged K (kv = p.k, seq = p.k_seqs[b], base0 = d.k_cache, list =
/// d.k_list) or V start: element 0 of list tensor b, or of the one tensor advanced b * s_batch
/// elements. Null for an empty tensor, whose rows nothing reads. Pointer arithmetic only.
const void* kv_batch_base(const core::KvCacheView& kv, const core::KvCacheView::Seq& seq,
                          const void* base0, const TensorView* list, int64_t b);

/// Non-paged p: writes every batch's K and V bases to k_seq / v_seq (p.batch entries each) and
/// points d's k_seq / v_seq at them.
void bind_batch_bases(const core::IfaProblem& p, const void** k_seq, const void** v_seq,
                      core::IfaData* d);

/// "B=2 N=32 KV_N=8 D=128 fp16/fp16 paged": p's shape for KVFLASH_VERBOSE=dispatch, into buf
/// (size bytes, truncated; no allocation).
void describe(const core::IfaProblem& p, char* buf, size_t size);

}  // namespace kvflash::ifa
