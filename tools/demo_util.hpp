// Small pieces the demo workloads share: deterministic data, timing, and the sample check report.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <vector>

#include "cache_flush.hpp"
#include "core/half.hpp"
#include "demo.hpp"
#include "timing.hpp"

namespace kvflash::tools {

/// SplitMix64: fast, deterministic, good enough for test data.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  /// Uniform in [-1, 1).
  float uniform() { return static_cast<float>(next() >> 40) * 0x1p-23f - 1.0f; }
  /// Roughly N(0, 1) (sum of four uniforms, rescaled): cheap and bounded.
  float normal() { return (uniform() + uniform() + uniform() + uniform()) * 0.8660254f; }

 private:
  uint64_t state_;
};

inline void fill_bf16(std::vector<uint16_t>& v, Rng& rng, float scale) {
  for (auto& x : v) x = core::float_to_bf16(rng.normal() * scale);
}
inline void fill_int8(std::vector<int8_t>& v, Rng& rng) {
  for (auto& x : v) x = static_cast<int8_t>(static_cast<int>(rng.next() % 255) - 127);
}

/// A paged cache's block table for sequences of the given lengths: (B, blocks_per_seq), unused
/// slots -1, blocks handed out in a shuffled order as an allocator that has run a while would.
struct PagedLayout {
  int64_t num_blocks = 0, blocks_per_seq = 0;
  std::vector<int32_t> block_table;
};
template <typename Int>
PagedLayout make_paged_layout(const std::vector<Int>& lengths, int64_t block_size,
                              int64_t spare_blocks, Rng& rng) {
  PagedLayout p;
  for (Int len : lengths) {
    p.blocks_per_seq = std::max<int64_t>(p.blocks_per_seq, (len + block_size - 1) / block_size);
    p.num_blocks += (len + block_size - 1) / block_size;
  }
  p.num_blocks += spare_blocks;
  std::vector<int32_t> ids(p.num_blocks);
  for (int64_t i = 0; i < p.num_blocks; ++i) ids[i] = static_cast<int32_t>(i);
  for (int64_t i = p.num_blocks - 1; i > 0; --i) std::swap(ids[i], ids[rng.next() % (i + 1)]);
  p.block_table.assign(lengths.size() * p.blocks_per_seq, -1);
  size_t next = 0;
  for (size_t b = 0; b < lengths.size(); ++b)
    for (int64_t j = 0; j < (lengths[b] + block_size - 1) / block_size; ++j)
      p.block_table[b * p.blocks_per_seq + j] = ids[next++];
  return p;
}

/// The untimed step before each timed run for options (time_calls' `before`): a cache flush of
/// options.flush_bytes, or nothing (warm caches).
inline std::function<void()> flush_before(const DemoOptions& options) {
  if (options.flush_bytes == 0) return nullptr;
  auto flusher = std::make_shared<CacheFlusher>(options.flush_bytes);
  return [flusher] { flusher->flush(); };
}

/// Result of comparing sampled rows with the reference.
struct SampleCheck {
  int64_t elements = 0;
  double worst_excess = 0;  ///< max of |got - want| / (atol + rtol * |want|); pass iff <= 1
  double worst_abs = 0;
  bool bits_match_batch = true;  ///< the sample run alone gave the same bits as inside the batch
  bool passed() const { return elements > 0 && worst_excess <= 1.0 && bits_match_batch; }

  /// One element: the value got (alone), its bits inside the batch agreeing or not, the reference
  /// want and the tolerance |got - want| <= atol + rtol * |want| (docs/conventions.md).
  void add(double got, bool same_bits_in_batch, double want, double atol, double rtol) {
    const double err = std::fabs(got - want);
    worst_abs = std::max(worst_abs, err);
    worst_excess = std::max(worst_excess, err / (atol + rtol * std::fabs(want)));
    bits_match_batch &= same_bits_in_batch;
    ++elements;
  }
  void print(const char* what) const {
    std::printf(
        "     sample check (%lld elements of %s vs double reference): worst |err| %.3g, "
        "worst err/tol %.3f, same bits alone as in batch: %s -> %s\n",
        static_cast<long long>(elements), what, worst_abs, worst_excess,
        bits_match_batch ? "yes" : "NO", passed() ? "PASSED" : "FAILED");
  }
};

}  // namespace kvflash::tools
