// The shared list of ScatterPaKvCache test cases and the builder of their buffers (random rows
// and caches, slots shuffled over the cache, some tokens skipped with a negative slot), used by
// the backend sweep (backend_ops_test), the operator's tests (kv_cache_test) and no_alloc_test.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kvflash/kv_cache.hpp"

namespace kvflash::testing {

struct KvCacheCase {
  int64_t tokens = 5, kv_heads = 2, key_dim = 16, value_dim = 16;
  int64_t num_blocks = 4, block_size = 8;
  DType dtype = DType::kFloat16;
  DType slot_dtype = DType::kInt32;
  bool with_value = true;
  /// key / value as strided views: each token's rows inside a wider buffer (a fused QKV
  /// projection's slice), heads 2 * D apart.
  bool strided_rows = false;
  /// The caches as the halves of one (2, num_blocks, block_size, KV_N, D) buffer, value second
  /// (vllm-ascend's kv_cache[0] / kv_cache[1]); else each its own buffer.
  bool fused_cache = false;
  /// The caches interleaved per block in one (num_blocks, 2, block_size, KV_N, D) buffer, key
  /// first: a block's rows are one run but blocks lie 2 blocks apart. With fused_cache unset.
  bool interleaved_blocks = false;
  /// Tokens given slot -1 (every `skip_every`-th from token 1; 0: none).
  int64_t skip_every = 3;
  /// A prefill's slots: requests of consecutive positions, each from position 0 of its own blocks
  /// (blocks in a shuffled order), so neighbouring tokens fill one block in order and runs cross
  /// block ends; else every token a random slot (a decode step's pattern).
  bool prefill_slots = false;
  /// With prefill_slots: the blocks in order (as a fresh allocator hands them out), so a run of
  /// slots goes on across a block's end into the next block.
  bool blocks_in_order = false;
  std::string name() const;
};

/// The buffers of one case and the arguments over them (data of every view set).
struct KvCacheCaseData {
  std::vector<uint8_t> key, value, key_cache, value_cache, slots;
  ScatterPaKvCacheArgs args;
  /// slot_mapping[t] = v (in the case's slot dtype).
  void set_slot(int64_t t, int64_t v);
};

/// Fills *d for c from seed: random bytes in the rows and caches, distinct slots for the tokens
/// (a random subset of the cache's), the skipped tokens -1.
void fill_kv_cache_case(const KvCacheCase& c, KvCacheCaseData* d, uint32_t seed);

/// Every dtype size, both slot dtypes, the key only, strided rows, a fused cache, T = 0, one
/// token, every slot of the cache used, prefill slots (with and without skipped tokens).
std::vector<KvCacheCase> kv_cache_cases();

}  // namespace kvflash::testing
