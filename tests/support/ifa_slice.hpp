// One sequence of a batched IFA call as a call of its own (the determinism tests' "batch b alone"):
// every batched input view sliced to batch b by offset, so it works on host and device views.
#pragma once

#include <cstdint>

#include "kvflash/ifa.hpp"
#include "kvflash/tensor.hpp"

namespace kvflash::testing {

/// v restricted to index b of its first dim (offset moved, dim 0 = 1).
TensorView slice_batch(TensorView v, int64_t b);

/// a for batch b alone: query, K/V (or block table), lengths, mask and pse sliced; the outputs
/// (attention_out, softmax_lse) sliced too: the caller points them at fresh buffers.
IfaArgs batch_inputs(const IfaArgs& a, int64_t b);

}  // namespace kvflash::testing
