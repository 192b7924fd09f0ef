// The one place that rejects IncreFlashAttention input (docs/semantics.md §2.2-2.11) and turns
// accepted arguments into the normalised core::IfaProblem the kernels consume.
#pragma once

#include "ops/ifa/ifa_problem.hpp"
#include "kvflash/ifa.hpp"
#include "kvflash/status.hpp"

namespace kvflash::ifa {

/// Checks every argument and, on success, fills *out. Pure: reads metadata and the host array
/// actual_seq_lengths only, never a tensor's contents (device data is read by the run). On failure
/// *out is left unchanged and last_error_message() names the argument: 161001 for a missing
/// required pointer (query, key, value, attention_out, an empty key/value list, a null tensor in a
/// list), 161002 otherwise.
Status validate_ifa(const IfaArgs& args, core::IfaProblem* out);

/// IFA's per-channel quant_scale2 / quant_offset2 shapes (n heads of d: [n*d], [1,n*d],
/// [1,1,n*d], [n,d], [1,n,d], [n,1,d], [1,n,1,d], [1,1,n,d]) as the (0, h, d) strides of *v;
/// false for any other shape. FIA's decode front end fills its description with it too.
bool quant2_channel_view(const TensorView& t, int64_t n, int64_t d, core::View3* v);

}  // namespace kvflash::ifa
