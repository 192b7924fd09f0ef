// A destination for the securec functions (include/securec.h) with guard bytes after its size:
// the securec tests and fuzz/fuzz_securec.cpp pass (data(), size()) and then check that nothing
// past size() was written.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace kvflash::test {

class GuardedBuffer {
 public:
  static constexpr size_t kGuard = 32;
  static constexpr char kFill = '\xA5';

  explicit GuardedBuffer(size_t size) : size_(size), bytes_(size + kGuard, kFill) {}

  char* data() { return bytes_.data(); }
  const char* data() const { return bytes_.data(); }
  size_t size() const { return size_; }

  /// Fills the buffer (not the guard) with `s`, terminated, and the rest with kFill.
  void set(const std::string& s) {
    for (size_t i = 0; i < size_; ++i)
      bytes_[i] = i < s.size() ? s[i] : (i == s.size() ? '\0' : kFill);
  }
  /// The buffer's bytes, guard excluded.
  std::string contents() const { return std::string(bytes_.data(), size_); }
  /// Whether every guard byte still holds kFill.
  bool guard_intact() const {
    for (size_t i = size_; i < bytes_.size(); ++i)
      if (bytes_[i] != kFill) return false;
    return true;
  }

 private:
  size_t size_;
  std::vector<char> bytes_;
};

}  // namespace kvflash::test
