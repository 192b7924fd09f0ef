// A plan's workspace in a test: allocated, never written here. std::vector<std::byte> would zero
// every byte, and a CPU plan's workspace is sized for up to 64 workers while a call touches only
// the parts of the threads it runs: zero-filling made every run touch every page, which under
// ASan (its quarantine makes each allocation fresh memory) was most of the FIA case tests' time.
// A kernel that reads its workspace before writing it is not helped by this: the bytes are what
// the allocator left, never a guaranteed zero.
#pragma once

#include <cstddef>
#include <memory>

namespace kvflash::testing {

class WorkspaceBuffer {
 public:
  explicit WorkspaceBuffer(size_t n) : bytes_(new std::byte[n]), size_(n) {}
  std::byte* data() { return bytes_.get(); }
  size_t size() const { return size_; }

 private:
  std::unique_ptr<std::byte[]> bytes_;
  size_t size_;
};

}  // namespace kvflash::testing
