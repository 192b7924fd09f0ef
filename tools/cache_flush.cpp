#include "cache_flush.hpp"

#include <algorithm>
#include <fstream>
#include <string>

namespace kvflash::tools {

size_t last_level_cache_bytes() {
  size_t best = 0;
  for (int index = 0; index < 8; ++index) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index);
    std::ifstream type_file(dir + "/type"), size_file(dir + "/size");
    std::string type, size;
    if (!(type_file >> type) || !(size_file >> size) || type == "Instruction") continue;
    // "260M", "2048K" or plain bytes.
    size_t value = 0;
    try {
      value = std::stoull(size);
    } catch (...) {
      continue;
    }
    const char unit = size.back();
    if (unit == 'K') value <<= 10;
    if (unit == 'M') value <<= 20;
    if (unit == 'G') value <<= 30;
    best = std::max(best, value);
  }
  return best;
}

size_t default_flush_bytes() {
  return std::max<size_t>(2 * last_level_cache_bytes(), size_t{64} << 20);
}

CacheFlusher::CacheFlusher(size_t bytes) : words_(bytes / sizeof(uint64_t), 1) {}

void CacheFlusher::flush() {
  // One load per 64-byte line is enough to bring the line in and push others out.
  uint64_t sum = sink_;
  for (size_t i = 0; i < words_.size(); i += 8) sum += words_[i];
  sink_ = sum;
  asm volatile("" : : "r"(sum) : "memory");
}

}  // namespace kvflash::tools
