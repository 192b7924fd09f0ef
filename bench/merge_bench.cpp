// merge_attention_states throughput against the memory it must move, and the bits it gives.
//
//   kvflash_merge_bench time PARTS ROWS DIM DTYPE THREADS REPS [cold]
// times REPS calls (median, ms) of the stacked LSE form (parts [PARTS, ROWS, DIM] of DTYPE
// bf16 | fp16 | fp32, out DTYPE), and in the same run a plain read of the same partial_out bytes
// on THREADS threads, each timing its own share once all are running (its bandwidth is the ceiling
// the merge is judged against: the merge reads those bytes once and writes 1/PARTS of them). cold:
// before each timed call, read a buffer of twice the last-level cache so the parts come from
// memory.
//   kvflash_merge_bench hash
// prints FNV-1a hashes of every output of the test case list (tests/support/merge_cases.hpp,
// plus longer rows) per case and in total, exact bits, and again with special values salted in
// (NaNs of several payloads, infinities, subnormals, fp16 overflow, bf16 ties), there with NaNs
// hashed as one class (hash_outputs says why): run under each KVFLASH_MAX_ISA level, and against
// an older library, to show the bits do not move.
// Uses the public API only, so the same source links against any build of the library.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/half.hpp"
#include "kvflash/merge.hpp"
#include "support/merge_cases.hpp"

namespace {

using kvflash::DType;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

size_t llc_bytes() {
  std::ifstream f("/sys/devices/system/cpu/cpu0/cache/index3/size");
  size_t kb = 0;
  f >> kb;
  return std::max<size_t>(kb * 1024, size_t{64} << 20);
}

// Reads words[lo, hi) and returns their sum (kept by the caller so the loads are not elided).
uint64_t read_range(const uint64_t* words, size_t lo, size_t hi) {
  uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  size_t i = lo;
  for (; i + 4 <= hi; i += 4) {
    s0 += words[i];
    s1 += words[i + 1];
    s2 += words[i + 2];
    s3 += words[i + 3];
  }
  for (; i < hi; ++i) s0 += words[i];
  return s0 + s1 + s2 + s3;
}

// Reads words[0, n) split over threads; returns the slowest thread's read time in ms (the threads
// are started and released together first, so their start-up is not timed) and adds the sum to
// *keep.
double parallel_read_ms(const uint64_t* words, size_t n, int threads, uint64_t* keep) {
  std::vector<uint64_t> sums(threads);
  std::vector<double> ms(threads);
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) {
      }
      const auto t0 = Clock::now();
      sums[t] = read_range(words, n * t / threads, n * (t + 1) / threads);
      ms[t] = ms_since(t0);
    });
  }
  while (ready.load() < threads) {
  }
  go.store(true, std::memory_order_release);
  for (auto& th : pool) th.join();
  for (uint64_t x : sums) *keep += x;
  return *std::max_element(ms.begin(), ms.end());
}

DType parse_dtype(const char* s) {
  if (!std::strcmp(s, "fp32")) return DType::kFloat32;
  if (!std::strcmp(s, "fp16")) return DType::kFloat16;
  if (!std::strcmp(s, "bf16")) return DType::kBFloat16;
  std::fprintf(stderr, "dtype must be bf16, fp16 or fp32\n");
  std::exit(2);
}

int time_merge(int argc, char** argv) {
  if (argc < 8) {
    std::fprintf(stderr, "usage: %s time PARTS ROWS DIM DTYPE THREADS REPS [cold]\n", argv[0]);
    return 2;
  }
  const int64_t parts = std::atoll(argv[2]), rows = std::atoll(argv[3]), dim = std::atoll(argv[4]);
  const DType dt = parse_dtype(argv[5]);
  const int threads = std::atoi(argv[6]), reps = std::atoi(argv[7]);
  const bool cold = argc > 8 && !std::strcmp(argv[8], "cold");
  const size_t es = kvflash::dtype_size(dt);
  const size_t in_bytes = static_cast<size_t>(parts * rows * dim) * es;
  std::vector<uint64_t> po((in_bytes + 7) / 8);
  std::mt19937 rng(1);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (int64_t i = 0; i < parts * rows * dim; ++i) {
    const float x = nd(rng);
    auto* b = reinterpret_cast<unsigned char*>(po.data()) + i * es;
    if (dt == DType::kFloat32) {
      std::memcpy(b, &x, 4);
    } else {
      const uint16_t h = dt == DType::kBFloat16 ? kvflash::core::float_to_bf16(x)
                                                : kvflash::core::float_to_fp16(x);
      std::memcpy(b, &h, 2);
    }
  }
  std::vector<float> lse(parts * rows), out_lse(rows);
  for (auto& x : lse) x = 2.0f * nd(rng);
  std::vector<uint64_t> out((rows * dim * es + 7) / 8);
  kvflash::MergeArgs a;
  a.partial_out = kvflash::TensorView::contiguous(po.data(), dt, {parts, rows, dim});
  a.partial_lse = kvflash::TensorView::contiguous(lse.data(), DType::kFloat32, {parts, rows});
  a.out = kvflash::TensorView::contiguous(out.data(), dt, {rows, dim});
  a.out_lse = kvflash::TensorView::contiguous(out_lse.data(), DType::kFloat32, {rows});
  a.num_threads = threads;
  std::vector<uint64_t> flush(cold ? 2 * llc_bytes() / 8 : 0, 1);
  uint64_t keep = 0;
  std::vector<double> t_merge, t_read;
  for (int r = 0; r < reps; ++r) {
    if (cold) keep += read_range(flush.data(), 0, flush.size());
    auto t0 = Clock::now();
    if (kvflash::merge_attention_states(a) != kvflash::Status::kSuccess) {
      std::fprintf(stderr, "merge failed: %s\n", kvflash::last_error_message());
      return 1;
    }
    t_merge.push_back(ms_since(t0));
    if (cold) keep += read_range(flush.data(), 0, flush.size());
    t_read.push_back(parallel_read_ms(po.data(), po.size(), threads, &keep));
  }
  const double mm = median(t_merge), mr = median(t_read);
  const double moved = static_cast<double>(in_bytes + static_cast<size_t>(rows * dim) * es);
  std::printf(
      "merge K%lld R%lld D%lld %s threads %d %s: merge %.3f ms (%.1f GB/s read+written), "
      "plain read of the parts %.3f ms (%.1f GB/s); merge / read-bound %.2f  [%llu]\n",
      static_cast<long long>(parts), static_cast<long long>(rows), static_cast<long long>(dim),
      argv[5], threads, cold ? "cold" : "warm", mm, moved / mm / 1e6, mr, in_bytes / mr / 1e6,
      mm / (moved / (in_bytes / mr)), static_cast<unsigned long long>(keep & 1));
  return 0;
}

uint64_t fnv(uint64_t h, const void* p, size_t n) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

// The outputs' bits; with nan_class, every NaN first replaced by one quiet NaN (the bits other
// than which NaN a lane holds: where two NaNs of different payloads meet in x * w + acc, the
// portable kernel's own compiled loops keep either operand's, differently in its vector body and
// its remainder loop, so no other build could promise those).
uint64_t hash_outputs(const kvflash::testing::MergeCaseData& d, DType out_dtype, bool nan_class,
                      uint64_t h) {
  auto f32 = [&](const std::vector<float>& v) {
    for (float x : v) {
      uint32_t u;
      std::memcpy(&u, &x, 4);
      if (nan_class && x != x) u = 0x7fc00000u;
      h = fnv(h, &u, 4);
    }
  };
  f32(d.out32);
  for (uint16_t x : d.out16) {
    const bool nan =
        out_dtype == DType::kBFloat16 ? (x & 0x7fffu) > 0x7f80u : (x & 0x7fffu) > 0x7c00u;
    const uint16_t v = nan_class && nan ? 0x7fffu : x;
    h = fnv(h, &v, 2);
  }
  f32(d.lse);
  f32(d.omax);
  f32(d.osum);
  return h;
}

int hash_cases() {
  using kvflash::testing::MergeCase;
  using kvflash::testing::MergeCaseData;
  std::vector<MergeCase> cases = kvflash::testing::merge_cases();
  // Longer rows, the shapes the vector paths see in models, on top of the list's 33 and 512.
  const size_t listed = cases.size();
  for (size_t i = 0; i < listed; ++i) {
    MergeCase c = cases[i];
    c.dim = i % 3 == 0 ? 128 : i % 3 == 1 ? 1000 : 17;
    c.rows = 9;
    cases.push_back(c);
  }
  uint64_t total = 1469598103934665603ull, total_special = total;
  uint32_t seed = 1;
  for (const MergeCase& c : cases) {
    for (bool special : {false, true}) {
      for (int threads : {1, 2}) {
        MergeCaseData d;
        kvflash::testing::fill_merge_case(c, &d, seed);
        if (special) kvflash::testing::add_special_values(c, &d, seed);
        d.args.num_threads = threads;
        const kvflash::Status st = kvflash::merge_attention_states(d.args);
        const uint64_t h0 = fnv(1469598103934665603ull, &st, sizeof(st));
        const uint64_t exact = hash_outputs(d, c.out_dtype, false, h0);
        const uint64_t classed = hash_outputs(d, c.out_dtype, true, h0);
        std::printf("%016llx %016llx %s%s t%d\n", static_cast<unsigned long long>(exact),
                    static_cast<unsigned long long>(classed), c.name().c_str(),
                    special ? " special" : "", threads);
        (special ? total_special : total) =
            fnv(special ? total_special : total, special ? &classed : &exact, sizeof(exact));
      }
    }
    ++seed;
  }
  std::printf(
      "exact bits: %016llx over %zu runs; NaNs as one class: %016llx over %zu runs with "
      "special values\n",
      static_cast<unsigned long long>(total), cases.size() * 2,
      static_cast<unsigned long long>(total_special), cases.size() * 2);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && !std::strcmp(argv[1], "time")) return time_merge(argc, argv);
  if (argc >= 2 && !std::strcmp(argv[1], "hash")) return hash_cases();
  std::fprintf(stderr, "usage: %s time PARTS ROWS DIM DTYPE THREADS REPS [cold] | hash\n", argv[0]);
  return 2;
}
