// A small, portable pseudo-random generator for test data: the same seed gives the same values on
// every platform and standard library (unlike std::normal_distribution).
#pragma once

#include <cmath>
#include <cstdint>
#include <string_view>

namespace kvflash::testing {

/// FNV-1a 64-bit hash: case names seed their data.
inline uint64_t fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : s) {
    h ^= static_cast<uint8_t>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

/// SplitMix64 with Box-Muller normals.
class TestRng {
 public:
  explicit TestRng(uint64_t seed) : state_(seed) {}

  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, 1).
  double unit() { return static_cast<double>(next() >> 11) * 0x1p-53; }
  double uniform(double lo, double hi) { return lo + (hi - lo) * unit(); }
  /// Uniform integer in [0, n).
  int64_t below(int64_t n) { return static_cast<int64_t>(next() % static_cast<uint64_t>(n)); }
  /// Standard normal.
  double normal() {
    const double u1 = 1.0 - unit();  // (0, 1]
    const double u2 = unit();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * 3.14159265358979323846 * u2);
  }

 private:
  uint64_t state_;
};

}  // namespace kvflash::testing
