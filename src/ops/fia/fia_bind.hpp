// Binding one FIA run's tensors to a plan (see ops/ifa/ifa_bind.hpp): the match against the
// plan's metadata, the pointers, and the per-batch rows derived from device data (left padding,
// block ids) in stream order.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kvflash/fia.hpp"
#include "kvflash/status.hpp"
#include "ops/fia/fia_problem.hpp"
#include "ops/ifa/ifa_fault.hpp"

namespace kvflash::fia {

/// args with every data pointer cleared, and softmax_lse dropped without softmax_lse_flag
/// (create ignores it then, so runs do too): what a plan keeps of its creation arguments.
FiaArgs strip_data(const FiaArgs& args, const core::FiaProblem& problem);

/// kInvalid unless args has plan's metadata (core::match_fields over fia::kFields); kNullPtr if a
/// tensor holding elements has no data.
Status check_matches_plan(const FiaArgs& plan, const FiaArgs& args);

/// Fills the pointers of d from args (matched). Host pointer arithmetic only.
void bind_data(const core::FiaProblem& p, const FiaArgs& args, core::FiaData* d);

/// What resolve_batches found wrong in the device data.
struct FiaResolved {
  int64_t num_pad_rows = 0;
  int64_t num_faults = 0;
  /// The first faulted batch (a block id outside [0, num_blocks)), as IFA describes one.
  core::FaultRecord first;
};

/// Reads the device data bound in d (query / KV padding sizes, block-table ids) and writes the
/// run's batches (p.batches with left padding and the re-derived band; p.params.batch entries),
/// its padding rows (at most p.rows entries) and per-batch fault flags (1: a referenced block id is
/// out of range; the batch is not run and its rows are NaN). Never reads outside a tensor.
FiaResolved resolve_batches(const core::FiaProblem& p, const core::FiaData& d,
                            core::FiaBatch* batches, core::FiaPadRow* pad_rows, uint8_t* faulted);

/// "B=2 N=32 KV_N=8 D=128 rows=4096 bf16 paged": p's shape for KVFLASH_VERBOSE=dispatch, into
/// buf (size bytes, truncated; no allocation).
void describe(const core::FiaProblem& p, char* buf, size_t size);

}  // namespace kvflash::fia
