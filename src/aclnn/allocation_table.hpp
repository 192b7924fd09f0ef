// The CUDA runtime's record of its allocations (runtime_cuda.cpp), with the range queries its
// copy checks need: CUDA's behaviour for a copy whose kind contradicts its pointers, or that runs
// past an allocation, is undefined, so those are refused before CUDA sees them. Plain C++ (tested
// on the CPU in tests/aclnn_backend_test.cpp); not thread-safe (the runtime holds its lock).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>

namespace kvflash::aclnn {

class AllocationTable {
 public:
  /// Records [base, base + size); size > 0.
  void add(const void* base, size_t size) { live_[addr(base)] = size; }
  /// Forgets the allocation that starts at base; false if there is none.
  bool remove(const void* base) { return live_.erase(addr(base)) != 0; }
  /// Whether [p, p + count) lies within one live allocation (count 0: p in it or at its end).
  bool contains(const void* p, size_t count) const {
    const auto it = containing(p);
    if (it == live_.end()) return false;
    const uintptr_t end = it->first + it->second;
    return addr(p) <= end && count <= end - addr(p);
  }
  /// Whether p points at a byte of a live allocation.
  bool points_into(const void* p) const {
    const auto it = containing(p);
    return it != live_.end() && addr(p) < it->first + it->second;
  }
  size_t size() const { return live_.size(); }

 private:
  static uintptr_t addr(const void* p) { return reinterpret_cast<uintptr_t>(p); }
  // The allocation with the greatest base <= p, or end().
  std::map<uintptr_t, size_t>::const_iterator containing(const void* p) const {
    auto it = live_.upper_bound(addr(p));
    if (it == live_.begin()) return live_.end();
    return --it;
  }
  std::map<uintptr_t, size_t> live_;
};

}  // namespace kvflash::aclnn
