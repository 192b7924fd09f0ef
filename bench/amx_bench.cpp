// Microbenchmark of the AMX microkernels (src/cpu/amx/) on decode shapes, beside the AVX-512
// work they would replace (not a test; docs/perf-log.md, round 3, quotes its output):
//   - the matrix engine's bf16 peak (register-only tdpbf16ps loop), where the amx level exists;
//   - QK^T for G query heads of one KV head over L2-resident bf16 K rows, D = 64/128/256:
//     amx::scores (K rows straight from the cache, 1 query piece for a bf16 query and 3 for an fp32
//     one) against a vdpbf16ps loop blocked 4 keys x 4 heads with one horizontal sum per score
//     (the scheme of score_bf16_dot in src/cpu/ifa/ifa_score_kernels-inl.h), in ns per key;
//   - P·V for 32 keys: the VNNI pair packing of V (pack_values_bf16_avx512) against fp32 FMAs of
//     widened V rows (P fp32), in ns per 32 keys.
// Built with the AVX-512 and AVX512-BF16 flags; it refuses to run below avx512bf16.
// Usage: kvflash_amx_bench [keys=4096] [reps=200]
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "cpu/amx/amx_kernels.hpp"
#include "cpu/isa.hpp"

namespace {

using namespace kvflash::cpu;

template <class F>
double best_ns(int reps, F&& f) {
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    const double ns =
        std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, ns);
  }
  return best;
}

volatile float g_sink;

// s[g * n + j] = q_g · k_j with vdpbf16ps, 4 keys x 4 heads a block (G a multiple of 4 or any
// remainder one head at a time), a horizontal sum per score.
void qk_vdpbf16(const uint16_t* q, int g_count, int d, const uint16_t* k, int n, float* s) {
  const auto bh = [](const void* p) { return (__m512bh)_mm512_loadu_si512(p); };
  for (int j = 0; j + 4 <= n; j += 4) {
    const uint16_t* k0 = k + static_cast<size_t>(j) * d;
    for (int g = 0; g < g_count; g += 4) {
      const int heads = std::min(4, g_count - g);
      __m512 acc[4][4];
      for (auto& row : acc) {
        for (auto& a : row) a = _mm512_setzero_ps();
      }
      for (int x = 0; x < d; x += 32) {
        __m512bh kv[4];
        for (int r = 0; r < 4; ++r) kv[r] = bh(k0 + r * d + x);
        for (int h = 0; h < heads; ++h) {
          const __m512bh qv = bh(q + (g + h) * d + x);
          for (int r = 0; r < 4; ++r) acc[h][r] = _mm512_dpbf16_ps(acc[h][r], qv, kv[r]);
        }
      }
      for (int h = 0; h < heads; ++h) {
        for (int r = 0; r < 4; ++r) s[(g + h) * n + j + r] = _mm512_reduce_add_ps(acc[h][r]);
      }
    }
  }
}

// o[g][x] += sum_k p[g][k] * v[k][x] for 32 keys, V bf16 widened to fp32.
void pv_fma(const float* p, int g_count, const uint16_t* v, int d, float* o) {
  for (int x = 0; x < d; x += 16) {
    __m512 acc[16] = {};
    for (int g = 0; g < g_count; ++g) acc[g] = _mm512_loadu_ps(o + g * d + x);
    for (int k = 0; k < 32; ++k) {
      const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(v + k * d + x));
      const __m512 vk = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(raw), 16));
      for (int g = 0; g < g_count; ++g) {
        acc[g] = _mm512_fmadd_ps(_mm512_set1_ps(p[g * 32 + k]), vk, acc[g]);
      }
    }
    for (int g = 0; g < g_count; ++g) _mm512_storeu_ps(o + g * d + x, acc[g]);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 4096;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 200;
  if (detected_isa() < Isa::kAvx512Bf16) {
    std::printf("needs avx512bf16 (detected %s)\n", isa_name(detected_isa()));
    return 1;
  }
  const bool amx_ok = active_isa() >= Isa::kAmx;
  std::printf("isa %s; amx: %s\n", isa_name(active_isa()),
              amx_ok ? "available" : (detected_isa() >= Isa::kAmx ? "capped"
                                                                  : amx_unavailable_reason()));
  if (amx_ok) {
    const int64_t iters = 1 << 18;
    const double ns = best_ns(5, [&] { g_sink = amx::peak_loop(iters); });
    std::printf("AMX tdpbf16ps peak, 1 thread: %.0f GFLOP/s (%.2f ns a tdpbf16ps)\n",
                4.0 * iters * 16384 / ns, ns / (4.0 * iters));
  }
  std::mt19937 rng(1);
  std::uniform_int_distribution<int> bits(0x3c00, 0x4000);  // bf16 values in [2^-7, 2]
  std::printf("QK^T, %d keys, ns per key (L2-resident K)\n", n);
  std::printf("%4s %3s %12s %12s %12s\n", "D", "G", "vdpbf16ps", "amx q-bf16", "amx q-fp32x3");
  for (int d : {64, 128, 256}) {
    std::vector<uint16_t> k(static_cast<size_t>(n) * d), q(8 * d);
    for (auto& x : k) x = static_cast<uint16_t>(bits(rng));
    for (auto& x : q) x = static_cast<uint16_t>(bits(rng));
    std::vector<float> qf(8 * d), s(static_cast<size_t>(8) * n + 64);
    for (int i = 0; i < 8 * d; ++i) qf[i] = 1.0f + static_cast<float>(i % 97) * 1e-3f;
    for (int g = 1; g <= 8; ++g) {
      const double vec = best_ns(reps, [&] { qk_vdpbf16(q.data(), g, d, k.data(), n, s.data()); });
      double amx1 = 0, amx3 = 0;
      if (amx_ok) {
        std::vector<uint16_t> p1(amx::query_pack_size(g, d, 1)), p3(amx::query_pack_size(g, d, 3));
        amx::pack_query<amx::KvType::kBf16>(q.data(), d, g, d, p1.data());
        amx::pack_query_f32(qf.data(), d, g, d, 3, p3.data());
        amx::TileScope scope(g);
        amx1 = best_ns(reps, [&] {
          amx::scores(amx::KvType::kBf16, k.data(), d, n, d, p1.data(), g, 1, s.data(), g);
        });
        amx3 = best_ns(reps, [&] {
          amx::scores(amx::KvType::kBf16, k.data(), d, n, d, p3.data(), g, 3, s.data(), g);
        });
      }
      std::printf("%4d %3d %12.2f %12.2f %12.2f\n", d, g, vec / n, amx1 / n, amx3 / n);
    }
  }
  std::printf("P.V, 32 keys, ns per 32-key block (L1-resident)\n");
  std::printf("%4s %3s %12s %12s\n", "D", "G", "fma P.V", "pack V");
  for (int d : {64, 128, 256}) {
    std::vector<uint16_t> v(32 * d), packed(amx::value_pack_size(d, amx::KvType::kBf16));
    for (auto& x : v) x = static_cast<uint16_t>(bits(rng));
    std::vector<float> p(16 * 32, 0.01f), o(static_cast<size_t>(16) * d, 0.0f);
    constexpr int kInner = 100;  // calls a timed sample (a call is ~100 ns)
    const double pack = best_ns(reps, [&] {
      for (int i = 0; i < kInner; ++i) {
        g_sink = amx::pack_values_bf16_avx512(v.data(), d, 32, d, packed.data()) ? 1.0f : 0.0f;
      }
    }) / kInner;
    for (int g : {1, 2, 4, 8}) {
      const double fma = best_ns(reps, [&] {
        for (int i = 0; i < kInner; ++i) pv_fma(p.data(), g, v.data(), d, o.data());
      }) / kInner;
      g_sink = o[0];
      std::printf("%4d %3d %12.1f %12.1f\n", d, g, fma, pack);
    }
  }
  return 0;
}
