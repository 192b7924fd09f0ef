#include "aclnn/freed_blocks.hpp"

#include <sanitizer/asan_interface.h>

#include <utility>

namespace kvflash::aclnn {

HostBlock FreedBlocks::take(size_t bytes) {
  for (auto it = kept_.rbegin(); it != kept_.rend(); ++it) {
    if (it->bytes != bytes) continue;
    HostBlock block = std::move(it->block);
    bytes_ -= it->bytes;
    kept_.erase(std::next(it).base());
    ASAN_UNPOISON_MEMORY_REGION(block.get(), bytes);
    return block;
  }
  return nullptr;
}

std::vector<HostBlock> FreedBlocks::keep(HostBlock block, size_t bytes) {
  std::vector<HostBlock> dropped;
  if (bytes > kMaxBlockBytes) {
    dropped.push_back(std::move(block));
    return dropped;
  }
  while (!kept_.empty() && (kept_.size() + 1 > kMaxBlocks || bytes_ + bytes > kMaxBytes)) {
    ASAN_UNPOISON_MEMORY_REGION(kept_.front().block.get(), kept_.front().bytes);
    bytes_ -= kept_.front().bytes;
    dropped.push_back(std::move(kept_.front().block));
    kept_.pop_front();
  }
  ASAN_POISON_MEMORY_REGION(block.get(), bytes);
  kept_.push_back({bytes, std::move(block)});
  bytes_ += bytes;
  return dropped;
}

std::vector<HostBlock> FreedBlocks::clear() {
  std::vector<HostBlock> dropped;
  for (Kept& k : kept_) {
    ASAN_UNPOISON_MEMORY_REGION(k.block.get(), k.bytes);
    dropped.push_back(std::move(k.block));
  }
  kept_.clear();
  bytes_ = 0;
  return dropped;
}

}  // namespace kvflash::aclnn
