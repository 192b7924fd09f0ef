// One description of a workspace layout serves both its size and its pointers (FlashInfer's
// aligned allocator): a layout function takes its regions from a WorkspaceArena in order, once per
// plan or run, and keeps their offsets; the arena's end is the size the plan reserves, and a run
// materialises each region as the aligned workspace base plus its offset. Every backend's
// workspace (CPU IFA/SFA, CUDA IFA/SFA) is laid out this way. KVFLASH_HD: CUDA code lays out and
// carves with the same functions.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/hd.hpp"

namespace kvflash::core {

/// n rounded up to a multiple of a (a > 0).
KVFLASH_HD constexpr size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

class WorkspaceArena {
 public:
  /// Regions start at multiples of alignment, counted from the aligned workspace base.
  KVFLASH_HD constexpr explicit WorkspaceArena(size_t alignment) : align_(alignment) {}

  /// The offset of the next region, of `bytes` bytes (0: an absent region, at the current end).
  KVFLASH_HD constexpr size_t take(size_t bytes) {
    const size_t at = round_up(end_, align_);
    end_ = at + bytes;
    return at;
  }
  /// A region of n objects of T.
  template <typename T>
  KVFLASH_HD constexpr size_t take_array(size_t n) {
    return take(sizeof(T) * n);
  }

  /// Every region so far, rounded to the alignment: the stride of a layout repeated back to back.
  KVFLASH_HD constexpr size_t extent() const { return round_up(end_, align_); }
  /// The bytes a caller provides for this layout: extent() plus the slack that lets align_base
  /// move any caller pointer up to the alignment.
  KVFLASH_HD constexpr size_t bytes() const { return extent() + align_; }

 private:
  size_t align_;
  size_t end_ = 0;
};

/// The workspace base the offsets count from: ws moved up to a multiple of alignment (a workspace
/// of WorkspaceArena::bytes() has room for every region past it).
KVFLASH_HD inline std::byte* align_base(void* ws, size_t alignment) {
  const auto raw = reinterpret_cast<uintptr_t>(ws);
  return static_cast<std::byte*>(ws) + (round_up(raw, alignment) - raw);
}
KVFLASH_HD inline const std::byte* align_base(const void* ws, size_t alignment) {
  const auto raw = reinterpret_cast<uintptr_t>(ws);
  return static_cast<const std::byte*>(ws) + (round_up(raw, alignment) - raw);
}

}  // namespace kvflash::core
