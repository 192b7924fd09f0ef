// The fuzz input as a stream of decisions. Every decoder in fuzz/ reads the input front to back
// through this class; an exhausted input reads as zeros, so every prefix of an input is itself a
// valid input (libFuzzer's mutations stay meaningful) and the all-zero input decodes to the
// simplest valid call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>

namespace kvflash::fuzz {

/// Saturating int64 arithmetic for the decoders (values may already be extreme).
inline int64_t sat_add(int64_t a, int64_t b) {
  int64_t r;
  if (!__builtin_add_overflow(a, b, &r)) return r;
  return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}
inline int64_t sat_mul(int64_t a, int64_t b) {
  int64_t r;
  if (!__builtin_mul_overflow(a, b, &r)) return r;
  return (a < 0) == (b < 0) ? std::numeric_limits<int64_t>::max()
                            : std::numeric_limits<int64_t>::min();
}

class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  size_t remaining() const { return size_ - pos_; }

  uint8_t byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  bool flag() { return (byte() & 1) != 0; }
  /// True with probability about 1/n (n >= 2); false for a zero byte and when exhausted, so the
  /// all-zero input takes no rare branch.
  bool rare(int n) { return byte() % n == n - 1; }
  /// Uniform-ish in [0, n) (n >= 1).
  uint32_t below(uint32_t n) {
    if (n <= 1) {
      (void)byte();
      return 0;
    }
    uint32_t v = byte();
    if (n > 256) v = v << 8 | byte();
    if (n > 65536) v = v << 8 | byte();
    return v % n;
  }
  /// An integer in [lo, hi].
  int64_t in(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(below(static_cast<uint32_t>(hi - lo + 1)));
  }
  uint64_t u64() {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = v << 8 | byte();
    return v;
  }
  /// A value that breaks size and index arithmetic: 0, -1, small negatives, powers of two around
  /// the 31/32/62/63-bit edges, INT64 extremes, or a small value near `typical`.
  int64_t special(int64_t typical) {
    switch (byte() % 16) {
      case 0:
        return 0;
      case 1:
        return -1;
      case 2:
        return -static_cast<int64_t>(byte()) - 2;
      case 3:
        return std::numeric_limits<int32_t>::max();
      case 4:
        return int64_t{1} << 31;
      case 5:
        return int64_t{1} << 32;
      case 6:
        return (int64_t{1} << 62) + (byte() & 3);
      case 7:
        return std::numeric_limits<int64_t>::max();
      case 8:
        return std::numeric_limits<int64_t>::min();
      case 9:
        return std::numeric_limits<int32_t>::min();
      case 10:
        return (int64_t{1} << 40) + byte();
      case 11:
        return sat_add(typical, 1);
      case 12:
        return sat_add(typical, -1);
      case 13:
        return sat_mul(typical, 2);
      case 14:
        return static_cast<int64_t>(u64());
      default:
        return byte();
    }
  }
  /// A short string (for layout names): up to 8 bytes.
  std::string text() {
    const size_t n = below(9);
    std::string s;
    for (size_t i = 0; i < n; ++i) s.push_back(static_cast<char>(byte()));
    return s;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

}  // namespace kvflash::fuzz
