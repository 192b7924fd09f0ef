// Size arithmetic that detects overflow, used before anything is allocated or indexed.
#pragma once

#include <cstdint>
#include <optional>

namespace kvflash::core {

/// a * b, or nullopt when either is negative or the product overflows int64.
inline std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}
/// a + b, or nullopt when either is negative or the sum overflows int64.
inline std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t r;
  if (a < 0 || b < 0 || __builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}
/// Product of n non-negative dims, or nullopt on overflow or a negative dim.
inline std::optional<int64_t> checked_product(const int64_t* dims, int n) {
  int64_t r = 1;
  for (int i = 0; i < n; ++i) {
    auto m = checked_mul(r, dims[i]);
    if (!m) return std::nullopt;
    r = *m;
  }
  return r;
}

}  // namespace kvflash::core
