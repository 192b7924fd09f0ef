// Small pieces the demo workloads share: deterministic data, timing, and the sample check report.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <vector>

#include "core/half.hpp"

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

/// Median wall time in seconds of fn over iters runs after warmup runs.
inline double median_seconds(int warmup, int iters, const std::function<void()>& fn) {
  for (int i = 0; i < warmup; ++i) fn();
  std::vector<double> t;
  for (int i = 0; i < iters; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

/// Result of comparing sampled rows with the reference.
struct SampleCheck {
  int64_t elements = 0;
  double worst_excess = 0;  ///< max of |got - want| / (atol + rtol * |want|); pass iff <= 1
  double worst_abs = 0;
  bool bits_match_batch = true;  ///< the sample run alone gave the same bits as inside the batch
  bool passed() const { return elements > 0 && worst_excess <= 1.0 && bits_match_batch; }
};

}  // namespace kvflash::tools
