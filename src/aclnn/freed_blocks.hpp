// The blocks aclrtFree gave back on the host runtime, kept for a later aclrtMalloc of the same
// size (runtime_host.cpp). A CANN program allocates an operator's workspace before each launch
// and frees it after the synchronize; a block fresh from the C library came back with unmapped
// pages each time, and the kernel paid a page fault for each page it first wrote (17 a call, and
// a 4k-token decode 5-8 % slower than on a workspace it had used before, on the 2-core Xeon:
// docs/perf-log.md, "Phase 1 and the idle stream's wake-up"). A kept block keeps its pages.
//
// Bounded: at most kMaxBlocks blocks and kMaxBytes in all (the oldest go first), and no block
// larger than kMaxBlockBytes (a KV cache freed goes back at once). The caller's lock guards it.
// Under AddressSanitizer a kept block is poisoned, so a use after aclrtFree is still reported.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <deque>
#include <memory>
#include <vector>

namespace kvflash::aclnn {

struct AlignedFree {
  void operator()(void* p) const { std::free(p); }
};
using HostBlock = std::unique_ptr<void, AlignedFree>;

class FreedBlocks {
 public:
  static constexpr size_t kMaxBlocks = 32;
  static constexpr size_t kMaxBytes = size_t{64} << 20;
  static constexpr size_t kMaxBlockBytes = size_t{16} << 20;

  /// A kept block of exactly `bytes` (the newest such), no longer kept; null when there is none.
  HostBlock take(size_t bytes);
  /// Keeps block, of `bytes`. Returns what it does not keep (block itself when it is too large,
  /// or the oldest kept ones past the bounds) for the caller to free outside its lock.
  std::vector<HostBlock> keep(HostBlock block, size_t bytes);
  /// Gives back every kept block (to be freed outside the lock).
  std::vector<HostBlock> clear();

  size_t blocks() const { return kept_.size(); }
  size_t bytes() const { return bytes_; }

 private:
  struct Kept {
    size_t bytes;
    HostBlock block;
  };
  std::deque<Kept> kept_;  // oldest first
  size_t bytes_ = 0;
};

}  // namespace kvflash::aclnn
