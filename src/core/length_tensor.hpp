// The entries of a length tensor (actual_seq_lengths_query / _kv / _key of SFA and the lightning
// indexer) as the kernels read them: one rule for every operator's lengths (docs/semantics.md
// §3.3), a 1-D tensor of int32 or int64 entries. The plan records which (wide = int64); the run
// reads the entries, in stream order, as int64.
#pragma once

#include <cstdint>

#include "core/hd.hpp"
#include "kvflash/tensor.hpp"

namespace kvflash::core {

/// The dtypes a length tensor may have, and their names for messages.
constexpr bool is_length_dtype(DType t) { return t == DType::kInt32 || t == DType::kInt64; }
inline constexpr const char* kLengthDtypes = "int32 or int64";

/// Entry i of a length tensor whose element 0 is at data, element stride `stride`: int64 entries
/// when wide, else int32. Static: the per-ISA kernel units compile it with their own flags (see
/// src/ops/sfa/sfa_problem.hpp).
KVFLASH_HD static inline int64_t length_at(const void* data, bool wide, int64_t stride,
                                           int64_t i) {
  return wide ? static_cast<const int64_t*>(data)[i * stride]
              : static_cast<int64_t>(static_cast<const int32_t*>(data)[i * stride]);
}

}  // namespace kvflash::core
