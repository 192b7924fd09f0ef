#include "membw.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "cpu/thread_pool.hpp"

namespace kvflash::tools {

double measure_read_bandwidth_gbs(int num_threads, double buffer_gib) {
  const size_t words = static_cast<size_t>(buffer_gib * (1ull << 30)) / sizeof(uint64_t);
  std::unique_ptr<uint64_t[]> buf(new uint64_t[words]);
  // Touch every page so the measurement reads memory, not zero pages.
  for (size_t i = 0; i < words; ++i) buf[i] = i;

  constexpr int64_t kSlices = 256;
  std::vector<double> samples;
  std::atomic<uint64_t> sink{0};
  for (int pass = 0; pass < 5; ++pass) {
    const auto t0 = std::chrono::steady_clock::now();
    cpu::parallel_for(kSlices, num_threads, [&](int64_t slice, int) {
      const size_t begin = words * slice / kSlices, end = words * (slice + 1) / kSlices;
      // Four independent accumulators keep the loop bound by loads, not by the add chain.
      uint64_t a = 0, b = 0, c = 0, d = 0;
      size_t i = begin;
      for (; i + 4 <= end; i += 4) {
        a += buf[i];
        b ^= buf[i + 1];
        c += buf[i + 2];
        d ^= buf[i + 3];
      }
      for (; i < end; ++i) a += buf[i];
      sink.fetch_add(a + b + c + d, std::memory_order_relaxed);
    });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    samples.push_back(static_cast<double>(words * sizeof(uint64_t)) / s / 1e9);
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

}  // namespace kvflash::tools
