// The ScatterPaKvCache oracle (kvflash/kv_cache.hpp): the caches a valid call leaves, element by
// element, read through the views' logical indices (element_access.hpp), with the documented
// slot rules (negative: skipped; outside the cache or given twice: the call fails and nothing is
// written). A copy has no rounding: the expectation is the exact bytes. It shares no code with the
// validator or the kernel and assumes the arguments are valid (the slots may be anything).
#pragma once

#include <cstdint>
#include <vector>

#include "kvflash/kv_cache.hpp"

namespace kvflash::reference {

struct KvCacheReference {
  /// Whether the slots are acceptable (each in [0, num_blocks * block_size) or negative, none
  /// twice); when not, the expected caches are the inputs unchanged.
  bool slots_ok = true;
  /// The expected bytes of every element of key_cache / value_cache, row-major over their dims
  /// (dtype_size bytes each); value_cache's is empty without the value pair.
  std::vector<uint8_t> key_cache, value_cache;
};

/// Reads the caches (their contents before the call) and the rows; call it before the operator.
KvCacheReference kv_cache_reference(const ScatterPaKvCacheArgs& args);

/// The bytes of every element of v, row-major over its dims: what a cache holds now, for
/// comparison with KvCacheReference.
std::vector<uint8_t> element_bytes(const TensorView& v);

}  // namespace kvflash::reference
