// LightningIndexer CPU microbenchmark at DeepSeek-V3.2 decode shapes (issue 21, "Performance"):
// `rows` decode rows (TND query, one row per request), each scoring `keys` cached tokens of a
// PA_BSND cache of 128-token blocks (shuffled), 64 heads, D = 128, bf16 q / k / weights,
// sparse_count 2048, sparse_mode 3, top-k included. Caches are cold: a 256 MiB buffer is read
// between repetitions. The same run measures this machine's ceilings on the same threads
// (tools/membw.hpp, tools/bf16_peak.hpp: read bandwidth, vdpbf16ps, fp32 FMA, AMX tdpbf16ps) and
// reports the row against its roofline (tools/roofline.hpp, li_work: the bytes and FLOPs `kvflash
// bench li:...` counts; the ceiling of the engine the isa argument runs on). Not a test: run it by
// hand (README of bench/, docs/lightning_indexer.md).
//
//   kvflash_li_bench [rows=4] [keys=8192] [threads=1] [reps=5] [isa=best] [warm|cold] [small]
//                    [next_n=1]
// next_n=N: N query rows per request (MTP: the rows of a request read the same keys; rows must be
// a multiple of N), rows / N requests.
#include <sys/mman.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "cpu/isa.hpp"
#include "cpu/li/li_kernel.hpp"
#include "cpu/thread_pool.hpp"
#include "li_reference.hpp"
#include "support/li_run.hpp"
#include "membw.hpp"
#include "roofline.hpp"

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}
// CPU time of the calling thread: with one thread, the run's time without the intervals other
// processes held the core (the machine this was written on is shared).
double thread_cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

uint64_t g_state = 0x9e3779b97f4a7c15ull;
uint64_t next_rand() {
  g_state ^= g_state << 13;
  g_state ^= g_state >> 7;
  g_state ^= g_state << 17;
  return g_state;
}
// A bf16 of roughly N(0,1) magnitude (sum of uniforms), cheap enough for 10^9 elements.
uint16_t rand_bf16() {
  const uint64_t r = next_rand();
  const float x = (static_cast<float>(r & 0xffff) + static_cast<float>((r >> 16) & 0xffff) +
                   static_cast<float>((r >> 32) & 0xffff) - 98304.0f) /
                  37837.0f;
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace kvflash;
  const int64_t rows = argc > 1 ? std::atoll(argv[1]) : 4;
  const int64_t keys = argc > 2 ? std::atoll(argv[2]) : 8192;
  const int threads = argc > 3 ? std::atoi(argv[3]) : 1;
  const int reps = argc > 4 ? std::atoi(argv[4]) : 5;
  cpu::Isa isa = cpu::detected_isa();
  if (argc > 5) {
    const std::string s = argv[5];
    isa = s == "scalar"   ? cpu::Isa::kScalar
          : s == "avx2"   ? cpu::Isa::kAvx2
          : s == "avx512" ? cpu::Isa::kAvx512
          : s == "amx"    ? cpu::Isa::kAmx
                          : cpu::Isa::kAvx512Bf16;
    isa = std::min(isa, cpu::detected_isa());
  }
  // "warm" as the 7th argument skips the cache flush (the compute-only speed, for diagnosis).
  const bool warm = argc > 6 && std::string(argv[6]) == "warm";
  constexpr int64_t kHeads = 64, kD = 128, kBlock = 128, kK = 2048;
  int64_t next_n = 1;
  for (int a = 1; a < argc; ++a) {
    if (std::strncmp(argv[a], "next_n=", 7) == 0)
      next_n = std::max<int64_t>(std::atoll(argv[a] + 7), 1);
  }
  if (rows % next_n != 0) {
    std::fprintf(stderr, "rows (%lld) must be a multiple of next_n (%lld)\n",
                 static_cast<long long>(rows), static_cast<long long>(next_n));
    return 2;
  }
  const int64_t requests = rows / next_n;

  // Inputs: TND query [rows, 64, 128], weights [rows, 64], PA cache [blocks, 128, 1, 128].
  const int64_t blocks_per = (keys + kBlock - 1) / kBlock;
  const int64_t num_blocks = requests * blocks_per;
  std::vector<uint16_t> q(rows * kHeads * kD), w(rows * kHeads);
  // The cache on 2 MiB-aligned memory with MADV_HUGEPAGE unless "small" is the 8th argument:
  // a serving framework's KV cache is one large allocation, and with 4 KiB pages the shuffled
  // blocks of a cache beyond the TLB's reach cost a page walk every 16 rows.
  const bool small_pages = argc > 7 && std::string(argv[7]) == "small";
  const size_t kbytes = static_cast<size_t>(num_blocks * kBlock * kD) * 2;
  const size_t kalloc = (kbytes + (size_t{2} << 20) - 1) / (size_t{2} << 20) * (size_t{2} << 20);
  auto* kmem = static_cast<uint16_t*>(std::aligned_alloc(size_t{2} << 20, kalloc));
  if (!small_pages) madvise(kmem, kalloc, MADV_HUGEPAGE);
  uint16_t* k = kmem;
  for (auto& x : q) x = rand_bf16();
  for (auto& x : w) x = rand_bf16();
  for (size_t i = 0; i < kbytes / 2; ++i) k[i] = rand_bf16();
  std::vector<int32_t> bt(requests * blocks_per), asq(requests),
      ask(requests, static_cast<int32_t>(keys));
  std::vector<int32_t> perm(num_blocks);
  std::iota(perm.begin(), perm.end(), 0);
  for (int64_t i = num_blocks - 1; i > 0; --i)
    std::swap(perm[i], perm[next_rand() % static_cast<uint64_t>(i + 1)]);
  for (int64_t i = 0; i < requests * blocks_per; ++i) bt[i] = perm[i];
  for (int64_t r = 0; r < requests; ++r) asq[r] = static_cast<int32_t>((r + 1) * next_n);
  std::vector<int32_t> idx(rows * kK);

  reference::LiCall call;
  call.query = TensorView::contiguous(q.data(), DType::kBFloat16, {rows, kHeads, kD});
  call.key = TensorView::contiguous(k, DType::kBFloat16, {num_blocks, kBlock, 1, kD});
  call.weights = TensorView::contiguous(w.data(), DType::kBFloat16, {rows, kHeads});
  call.actual_seq_lengths_query = TensorView::contiguous(asq.data(), DType::kInt32, {requests});
  call.actual_seq_lengths_key = TensorView::contiguous(ask.data(), DType::kInt32, {requests});
  call.block_table = TensorView::contiguous(bt.data(), DType::kInt32, {requests, blocks_per});
  call.layout_query = "TND";
  call.layout_key = "PA_BSND";
  call.sparse_count = kK;
  call.sparse_mode = 3;
  call.sparse_indices = TensorView::contiguous(idx.data(), DType::kInt32, {rows, 1, kK});

  std::vector<char> flush(256u << 20, 1);
  std::vector<std::byte> ws;
  (void)testing::li_run_call(call, isa, threads, &ws);  // warm-up: pool threads, workspace pages
  std::vector<double> times, cpu_times;
  for (int rep = 0; rep < reps; ++rep) {
    uint64_t s = 0;
    if (!warm) {
      for (size_t i = 0; i < flush.size(); i += 64) s += static_cast<unsigned char>(flush[i]++);
    }
    if (s == 42) std::printf(" ");
    const auto t0 = Clock::now();
    const double c0 = thread_cpu_seconds();
    const Status st = testing::li_run_call(call, isa, threads, &ws);
    cpu_times.push_back(thread_cpu_seconds() - c0);
    times.push_back(seconds_since(t0));
    if (st != Status::kSuccess) {
      std::fprintf(stderr, "li_run failed: %s\n", last_error_message());
      return 1;
    }
  }
  // The fastest repetition is the least disturbed one (other processes share the cores); the
  // fractions are computed from it, the median is printed beside it.
  std::sort(times.begin(), times.end());
  std::sort(cpu_times.begin(), cpu_times.end());
  // One thread: its CPU time (wall time minus preemption) when that is the smaller.
  const double t = threads == 1 ? std::min(times[0], cpu_times[0]) : times[0];
  // The row's FLOPs and bytes, its ceiling and roofline: tools/roofline.hpp, as `kvflash bench
  // li:...` reports them. The ceilings are measured on the same threads; those the isa argument
  // keeps the kernel from (a lower isa than the machine's) do not count.
  const tools::Work work = tools::li_work(requests, rows, keys, kHeads, 2);
  const double bw = tools::measure_read_bandwidth_gbs(threads);
  const tools::ComputePeaks peaks =
      tools::usable_peaks(tools::measure_compute_peaks(threads), isa);
  const tools::Ceiling ceiling =
      tools::compute_ceiling(tools::RowDtype::kBf16, isa >= cpu::Isa::kAmx, peaks);
  const tools::Roofline roof = tools::roofline(work, t * 1e3, bw, ceiling);
  std::printf(
      "li rows=%lld next_n=%lld keys=%lld heads=64 D=128 bf16 K=2048 PA128 threads=%d isa=%s: %.3f "
      "ms (wall min %.3f, median %.3f), %.2f GB/s = %.3f of read bandwidth %.2f GB/s; %.1f GFLOP/s "
      "= %.3f of the %s ceiling %.1f GFLOP/s\n  %s\n",
      static_cast<long long>(rows), static_cast<long long>(next_n), static_cast<long long>(keys),
      threads, cpu::isa_name(isa), t * 1e3, times[0] * 1e3, times[times.size() / 2] * 1e3,
      work.bytes / t / 1e9, work.bytes / t / 1e9 / bw, bw, work.flops / t / 1e9,
      ceiling.gflops > 0 ? work.flops / t / 1e9 / ceiling.gflops : 0.0,
      ceiling.engine.empty() ? "compute" : ceiling.engine.c_str(), ceiling.gflops,
      tools::describe_roofline(roof, bw, ceiling).c_str());
  std::free(kmem);
  return 0;
}
