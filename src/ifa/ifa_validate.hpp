// The one place that rejects IncreFlashAttention input (spec §2.2-2.11) and turns accepted
// arguments into the normalised core::IfaProblem the kernels consume.
#pragma once

#include "core/ifa_problem.hpp"
#include "kvflash/ifa.hpp"
#include "kvflash/status.hpp"

namespace kvflash::ifa {

/// Checks every argument and, on success, fills *out. Pure: reads only host data (the
/// actual_seq_lengths array and element 0 of kv_padding_size, which kvflash reads at plan time),
/// never the tensors that are read at run time. On failure *out is left unchanged and
/// last_error_message() names the argument: 161001 for a missing required pointer (query, key,
/// value, attention_out, an empty key/value list, a null tensor in a list), 161002 otherwise.
Status validate_ifa(const IfaArgs& args, core::IfaProblem* out);

/// The phase-2 check of a paged problem: every block id that the lengths reference (the slots
/// covering [kv_begin, kv_begin + kv_len) of each batch) is within [0, num_blocks). Slots beyond
/// are never read and may hold anything. Reads the block table; success for non-paged problems.
Status check_block_table(const core::IfaProblem& p);

}  // namespace kvflash::ifa
