#include "bf16_peak.hpp"

#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "cpu/amx/amx_kernels.hpp"
#include "cpu/isa.hpp"
#include "cpu/thread_pool.hpp"
#include "tile_entries.hpp"

namespace kvflash::tools {
namespace {

constexpr int64_t kIters = int64_t{1} << 23;  // ~10 ms per pass at the expected peak
constexpr int kAcc = 12;  // independent chains: enough to cover the latency x ports of vdpbf16ps

// The sum of every lane of the kAcc accumulators (so the loops cannot be optimised away), stored
// and summed in scalar code (GCC 12 warns falsely inside _mm512_reduce_add_ps).
__attribute__((target("avx512f"))) float total512(const __m512* acc) {
  __m512 sum = acc[0];
  for (int i = 1; i < kAcc; ++i) sum = _mm512_add_ps(sum, acc[i]);
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, sum);
  float total = 0.0f;
  for (float x : lanes) total += x;
  return total;
}
__attribute__((target("avx2"))) float total256(const __m256* acc) {
  __m256 sum = acc[0];
  for (int i = 1; i < kAcc; ++i) sum = _mm256_add_ps(sum, acc[i]);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, sum);
  float total = 0.0f;
  for (float x : lanes) total += x;
  return total;
}

// Only called when the CPU has AVX512-BF16 (checked by the caller), so the target attribute is
// safe without building the whole file for that ISA.
__attribute__((target("avx512f,avx512bf16"))) float dot_loop(float seed) {
  __m512 acc[kAcc];
  for (int i = 0; i < kAcc; ++i) acc[i] = _mm512_set1_ps(0.0f);
  const __m512i a = _mm512_set1_epi32(0x3f803f80);  // bf16 pairs (1.0, 1.0)
  const __m512bh bh_a = reinterpret_cast<const __m512bh&>(a);
  const __m512i b = _mm512_castps_si512(_mm512_set1_ps(seed));
  const __m512bh bh_b = reinterpret_cast<const __m512bh&>(b);
  for (int64_t it = 0; it < kIters; ++it) {
    for (int i = 0; i < kAcc; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], bh_a, bh_b);
  }
  return total512(acc);
}

// The fp32 FMA loop of the kernels' fp32 paths (16 lanes x 2 FLOP per vfmadd231ps).
__attribute__((target("avx512f"))) float fma512_loop(float seed) {
  __m512 acc[kAcc];
  for (int i = 0; i < kAcc; ++i) acc[i] = _mm512_set1_ps(0.0f);
  const __m512 a = _mm512_set1_ps(1.0f), b = _mm512_set1_ps(seed);
  for (int64_t it = 0; it < kIters; ++it) {
    for (int i = 0; i < kAcc; ++i) acc[i] = _mm512_fmadd_ps(a, b, acc[i]);
  }
  return total512(acc);
}

// The same on AVX2 (8 lanes x 2 FLOP per vfmadd231ps).
__attribute__((target("avx2,fma"))) float fma256_loop(float seed) {
  __m256 acc[kAcc];
  for (int i = 0; i < kAcc; ++i) acc[i] = _mm256_set1_ps(0.0f);
  const __m256 a = _mm256_set1_ps(1.0f), b = _mm256_set1_ps(seed);
  for (int64_t it = 0; it < kIters; ++it) {
    for (int i = 0; i < kAcc; ++i) acc[i] = _mm256_fmadd_ps(a, b, acc[i]);
  }
  return total256(acc);
}

// The matrix engine's loop: kAmxIters x 4 tdpbf16ps of 16 x 16 x 32 (16,384 FLOP each), about
// 10 ms at the 2 TFLOP/s a core measured on a Xeon with AMX (docs/perf-log.md, round 3).
constexpr int64_t kAmxIters = int64_t{1} << 18;
constexpr double kAmxFlopPerCall = 4.0 * 16 * 16 * 32 * 2 * static_cast<double>(kAmxIters);
float amx_loop(float) { return cpu::amx::peak_loop(kAmxIters); }

// GFLOP/s of loop (flop_per_call FLOP a call) on every worker at once: the fastest of a few
// passes. A ceiling is only ever under-read (a pass another process preempts or shares a core
// with is slower, never faster), so the least disturbed pass is the estimate; the median of three
// had let a busy host's demo print an indexer at 117% of "the peak".
double measure(int num_threads, float (*loop)(float), double flop_per_call) {
  const int threads = num_threads > 0 ? num_threads : cpu::default_num_threads();
  std::atomic<uint32_t> sink{0};
  std::vector<double> samples;
  for (int pass = 0; pass < 5; ++pass) {
    const auto t0 = std::chrono::steady_clock::now();
    cpu::parallel_for(threads, threads, [&](int64_t w, int) {
      const float r = loop(1e-30f * static_cast<float>(w + 1));
      sink.fetch_add(static_cast<uint32_t>(r != 0.0f), std::memory_order_relaxed);
    });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    samples.push_back(flop_per_call * threads / s / 1e9);
  }
  return *std::max_element(samples.begin(), samples.end());
}

}  // namespace

double measure_bf16_peak_gflops(int num_threads) {
  if (cpu::active_isa() < cpu::Isa::kAvx512Bf16) return 0.0;
  return measure(num_threads, dot_loop, 64.0 * kAcc * kIters);
}

double measure_amx_peak_gflops(int num_threads) {
  if (cpu::active_isa() < cpu::Isa::kAmx) return 0.0;
  return measure(num_threads, amx_loop, kAmxFlopPerCall);
}

ComputePeaks measure_compute_peaks(int num_threads) {
  return {measure_bf16_peak_gflops(num_threads), measure_fma_peak_gflops(num_threads),
          measure_amx_peak_gflops(num_threads)};
}

void print_compute_peaks(const ComputePeaks& peaks, int threads) {
  if (peaks.compute() > 0) {
    std::printf("compute peak (measured, %d threads): %.0f GFLOP/s, the faster of a bf16 vdpbf16ps "
                "loop (%.0f GFLOP/s) and an fp32 FMA loop (%.0f GFLOP/s)\n",
                threads, peaks.compute(), peaks.bf16, peaks.fma);
  }
  if (peaks.amx > 0) {
    const std::string on = tile_entries().names();
    const char* judged = on.empty() ? ""
                         : tile_entries().all()
                             ? " run their cpu-amx entries on the tiles: their compute-bound rows "
                               "are judged against it"
                             : " run their cpu-amx entries on the tiles: their compute-bound rows "
                               "are judged against it, the others' against the vector peak";
    std::printf("matrix engine peak (measured, %d threads): AMX tdpbf16ps loop %.0f GFLOP/s "
                "(%s%s)\n",
                threads, peaks.amx, on.empty() ? "no operator runs on the tiles" : on.c_str(),
                judged);
  } else {
    std::printf("matrix engine peak: none (isa %s; amx: %s)\n", cpu::isa_name(cpu::active_isa()),
                cpu::detected_isa() >= cpu::Isa::kAmx ? "capped by KVFLASH_MAX_ISA"
                                                      : cpu::amx_unavailable_reason());
  }
}

double measure_fma_peak_gflops(int num_threads) {
  if (cpu::active_isa() >= cpu::Isa::kAvx512) {
    return measure(num_threads, fma512_loop, 32.0 * kAcc * kIters);
  }
  if (cpu::active_isa() >= cpu::Isa::kAvx2) {
    return measure(num_threads, fma256_loop, 16.0 * kAcc * kIters);
  }
  return 0.0;
}

}  // namespace kvflash::tools
