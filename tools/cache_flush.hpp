// Cold-cache timing for `kvflash bench`: decode attention in a model reads each layer's KV cache
// after the other layers have pushed it out of the caches, so a benchmark that times the same
// cache again and again measures the last-level cache (260 MiB on some servers: a whole 8k-token
// Llama-3-8B batch fits), not memory. Before each timed call the bench reads a buffer twice the
// size of the last-level cache, outside the timed region.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kvflash::tools {

/// The largest data or unified cache of cpu0 in bytes (sysfs), or 0 when it cannot be read.
size_t last_level_cache_bytes();

/// Bytes the bench reads between timed calls: 2 x the last-level cache, at least 64 MiB (when the
/// size is unknown too).
size_t default_flush_bytes();

class CacheFlusher {
 public:
  explicit CacheFlusher(size_t bytes);
  /// Reads every cache line of the buffer (one thread; the result is kept so it is not elided).
  void flush();
  size_t bytes() const { return words_.size() * sizeof(uint64_t); }

 private:
  std::vector<uint64_t> words_;
  uint64_t sink_ = 0;
};

}  // namespace kvflash::tools
