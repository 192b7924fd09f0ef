// The normalised cache-write problem (what a ScatterPaKvCachePlan holds) and the pointers of one
// run. Rows are addressed through element strides, so any layout of the tensors is one problem.
#pragma once

#include <cstdint>

#include "kvflash/tensor.hpp"

namespace kvflash::core {

/// One side of the write (key or value): the source rows and the cache, as element strides.
struct KvCacheSide {
  int64_t head_dim = 0;  ///< Dk or Dv
  /// source element (t, n, d) at t * s_tok + n * s_head + d * s_dim
  int64_t s_tok = 0, s_head = 0, s_dim = 0;
  /// cache element (block, pos, n, d) at block * c_block + pos * c_pos + n * c_head + d * c_dim
  int64_t c_block = 0, c_pos = 0, c_head = 0, c_dim = 0;
};

struct KvCacheProblem {
  Device device{};
  DType dtype = DType::kFloat16;     ///< key / value / caches (the copy is bitwise)
  DType slot_dtype = DType::kInt32;  ///< slot_mapping: int32 | int64
  int64_t tokens = 0;                ///< T
  int64_t num_kv_heads = 0;          ///< KV_N
  int64_t num_blocks = 0, block_size = 0;
  int64_t num_slots = 0;  ///< num_blocks * block_size (checked to fit int64)
  int64_t slot_stride = 0;
  KvCacheSide key;
  bool has_value = false;
  KvCacheSide value;
  /// Entries of the duplicate-check table (a power of two >= 2 * T; 0 for T = 0), 16 bytes each.
  int64_t table_entries = 0;
};

struct KvCacheData {
  const void* key = nullptr;
  void* key_cache = nullptr;
  const void* slot_mapping = nullptr;
  const void* value = nullptr;
  void* value_cache = nullptr;
};

}  // namespace kvflash::core
