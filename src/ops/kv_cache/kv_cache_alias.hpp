// Whether the caches of a cache write share memory: a cache whose strides give two of its
// elements one address (refused when planned: its metadata says so), and a key cache and a value
// cache with an element in common (refused by the run, which sees the addresses: a plan is reused
// with other data). Either would make a write's result depend on the order of the copies.
#pragma once

#include <cstdint>

#include "kvflash/tensor.hpp"

namespace kvflash::kv_cache {

/// False when no two index tuples of v address one element, proved by the sufficient test:
/// the dims of extent > 1 sorted by |stride|, each |stride| past the reach of the dims below it
/// (sum of |stride| * (extent - 1)); true otherwise, with *dim the first dim that fails it.
bool may_self_overlap(const TensorView& v, int* dim);

/// One 4-D cache view from its first element: address, dims and element strides.
struct CacheExtent {
  const void* base;
  int64_t shape[4];
  int64_t strides[4];
};

/// Whether caches a and b (elements of elem_size bytes, neither overlapping itself) have a byte
/// in common. Exact when their strides are equal (the layouts of one buffer: vLLM's (2, blocks,
/// ...), FlashInfer's (blocks, 2, ...), a (.., Dk + Dv) split); otherwise true whenever their
/// address ranges intersect.
bool caches_share_memory(const CacheExtent& a, const CacheExtent& b, int64_t elem_size);

}  // namespace kvflash::kv_cache
