#include "kv_cache_workload.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

#include "demo_util.hpp"
#include "kv_cache_reference.hpp"
#include "cpu/thread_pool.hpp"
#include "kvflash/kv_cache.hpp"
#include "roofline.hpp"

namespace kvflash::tools {

bool run_kv_cache_workload(const KvCacheWorkloadShape& s, const DemoOptions& options,
                           double read_bandwidth_gbs, KvCacheWorkloadResult* result) {
  *result = KvCacheWorkloadResult{};
  const int64_t t = s.tokens, row = s.num_kv_heads * s.head_dim;
  const size_t elem = dtype_size(s.dtype);
  Rng rng(static_cast<uint64_t>(t) * 7 + static_cast<uint64_t>(row) * 131 +
          static_cast<uint64_t>(s.decode));
  // Decode: T requests of one token each, every one in its own block; prefill: requests of up to
  // 1024 tokens in consecutive slots. Blocks come in a shuffled order; 2 spare blocks.
  const int64_t per_request = s.decode ? 1 : 1024;
  std::vector<int64_t> lengths;
  for (int64_t left = t; left > 0; left -= per_request)
    lengths.push_back(std::min(left, per_request));
  const PagedLayout paged = make_paged_layout(lengths, s.block_size, 2, rng);
  std::vector<int32_t> slots;
  for (size_t r = 0; r < lengths.size(); ++r) {
    // A decode token lands at a random offset of its block (the request's last position).
    const int64_t first = s.decode ? static_cast<int64_t>(rng.next() % s.block_size) : 0;
    for (int64_t p = 0; p < lengths[r]; ++p) {
      const int64_t pos = first + p;
      slots.push_back(static_cast<int32_t>(
          paged.block_table[r * paged.blocks_per_seq + pos / s.block_size] * s.block_size +
          pos % s.block_size));
    }
  }
  std::vector<std::byte> key(t * row * elem), value(t * row * elem);
  for (auto* v : {&key, &value})
    for (auto& b : *v) b = static_cast<std::byte>(rng.next());
  const size_t cache_bytes = static_cast<size_t>(paged.num_blocks * s.block_size * row) * elem;
  std::vector<std::byte> key_cache(cache_bytes), value_cache(cache_bytes);

  ScatterPaKvCacheArgs a;
  a.key = TensorView::contiguous(key.data(), s.dtype, {t, s.num_kv_heads, s.head_dim});
  a.value = TensorView::contiguous(value.data(), s.dtype, {t, s.num_kv_heads, s.head_dim});
  const std::vector<int64_t> cache_shape = {paged.num_blocks, s.block_size, s.num_kv_heads,
                                            s.head_dim};
  a.key_cache = TensorView::contiguous(key_cache.data(), s.dtype, cache_shape);
  a.value_cache = TensorView::contiguous(value_cache.data(), s.dtype, cache_shape);
  a.slot_mapping = TensorView::contiguous(slots.data(), DType::kInt32, {t});
  a.num_threads = options.num_threads;
  std::unique_ptr<ScatterPaKvCachePlan> plan;
  if (ScatterPaKvCachePlan::create(a, &plan) != Status::kSuccess) {
    std::printf("%s: plan failed: %s\n", s.name.c_str(), last_error_message());
    return false;
  }
  std::vector<std::byte> ws(plan->workspace_size());
  Status st = Status::kSuccess;
  // The yardstick, alternated with the write run by run: the same rows copied into contiguous
  // memory of the same size (no slots, no blocks) on as many threads, from the same cold caches.
  // A store misses like a load (the line is read before it is written), so a copy's GB/s sits
  // below the read bandwidth on most machines: "of a plain copy" says how much the scatter adds.
  std::vector<std::byte> key_copy(key.size()), value_copy(value.size());
  const auto plain_copy = [&] {
    const int64_t bytes = static_cast<int64_t>(key.size()), chunk = int64_t{1} << 18;
    cpu::parallel_for(2 * ((bytes + chunk - 1) / chunk), options.num_threads, [&](int64_t i, int) {
      const bool v = i % 2 != 0;
      const int64_t at = i / 2 * chunk, n = std::min(chunk, bytes - at);
      std::memcpy((v ? value_copy : key_copy).data() + at, (v ? value : key).data() + at,
                  static_cast<size_t>(n));
    });
  };
  const auto [times, copy_times] = time_alternated(
      2, options.iterations, [&] { st = plan->run(a, ws.data(), ws.size()); }, plain_copy,
      flush_before(options));
  const double seconds = times.median_seconds();
  if (st != Status::kSuccess) {
    std::printf("%s: run failed: %s\n", s.name.c_str(), last_error_message());
    return false;
  }
  const double bytes = kv_cache_work(t, row * static_cast<int64_t>(elem)).bytes;  // roofline.hpp
  const double gbs = bytes / seconds / 1e9;
  std::printf(
      "kvcache  %s  %s T=%lld KV_N=%lld D=%lld bs=%lld %s  %s  %7.1f MB  "
      "%6.1f GB/s",
      s.name.c_str(), dtype_name(s.dtype), static_cast<long long>(t),
      static_cast<long long>(s.num_kv_heads), static_cast<long long>(s.head_dim),
      static_cast<long long>(s.block_size), s.decode ? "decode slots" : "prefill slots",
      describe(times, options.warm(), "/call").c_str(), bytes / 1e6, gbs);
  if (read_bandwidth_gbs > 0) std::printf(" (%.0f%% of read bw)", 100.0 * gbs / read_bandwidth_gbs);
  std::printf("\n     a plain copy of the same rows (contiguous, same threads and caches): %s: the "
              "write at %.2f of its speed\n",
              describe(copy_times, options.warm(), "/call").c_str(),
              copy_times.median_ms / times.median_ms);

  // The check: the caches after the runs against the reference's write into copies of them as
  // they were before (every run writes the same bytes: one write suffices).
  std::vector<std::byte> k0(cache_bytes), v0(cache_bytes);
  ScatterPaKvCacheArgs r = a;
  r.key_cache.data = k0.data();
  r.value_cache->data = v0.data();
  const reference::KvCacheReference ref = reference::kv_cache_reference(r);
  const bool same = ref.slots_ok && ref.key_cache.size() == cache_bytes &&
                    ref.value_cache.size() == cache_bytes &&
                    std::memcmp(ref.key_cache.data(), key_cache.data(), cache_bytes) == 0 &&
                    std::memcmp(ref.value_cache.data(), value_cache.data(), cache_bytes) == 0;
  std::printf("     check (both caches, %zu bytes each, vs the reference's write): %s\n",
              cache_bytes, same ? "PASSED" : "FAILED");
  *result = {times, copy_times, bytes, gbs, same};
  return same;
}

}  // namespace kvflash::tools
