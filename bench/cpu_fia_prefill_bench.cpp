// Causal prefill through the CPU FIA kernel (src/cpu/fia/) at Llama-3-8B attention heads:
// B = 1, N = 32, KV_N = 8, D = 128, bf16, BSND, sparse mode 3 with S1 = S2 (band j <= i).
//   kvflash_cpu_fia_bench <tokens> <threads> [reps]
// Prints the best time and the causal FLOP rate (4 * N * D * S * (S + 1) / 2 FLOPs), and the row
// against its roofline (tools/roofline.hpp: the read bandwidth and the vector compute ceiling,
// measured in the same run on the same threads). Compare with bench/sdpa_causal.py (torch SDPA,
// is_causal=True) on the same threads.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "core/half.hpp"
#include "cpu/fia/fia_kernel.hpp"
#include "cpu/isa.hpp"
#include "tools/membw.hpp"
#include "tools/roofline.hpp"

int main(int argc, char** argv) {
  using namespace kvflash;
  const int64_t S = argc > 1 ? std::atoll(argv[1]) : 2048;
  const int threads = argc > 2 ? std::atoi(argv[2]) : 1;
  const int reps = argc > 3 ? std::atoi(argv[3]) : 3;
  const int64_t N = 32, KVN = 8, D = 128;
  std::vector<uint16_t> q(S * N * D), k(S * KVN * D), v(S * KVN * D), out(S * N * D);
  uint64_t x = 12345;
  auto rnd = [&] {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    return core::float_to_bf16(static_cast<float>(static_cast<int64_t>(x >> 40) % 2001 - 1000) / 1000.0f);
  };
  for (auto& e : q) e = rnd();
  for (auto& e : k) e = rnd();
  for (auto& e : v) e = rnd();

  cpu::FiaBatch bt;
  bt.q_rows = S, bt.kv_len = S, bt.band_hi = 0;
  cpu::FiaParams p;
  p.batch = 1, p.num_heads = N, p.num_kv_heads = KVN, p.head_dim = D, p.value_dim = D;
  p.dtype = DType::kBFloat16, p.out_dtype = DType::kBFloat16;
  p.scale = 0.08838834764831845f;
  p.q_row = N * D, p.q_head = D, p.o_row = N * D, p.o_head = D;
  p.k_pos = KVN * D, p.k_head = D, p.v_pos = KVN * D, p.v_head = D;
  p.batches = &bt;
  cpu::FiaPointers d;
  d.q = q.data(), d.k = k.data(), d.v = v.data(), d.out = out.data();
  std::vector<std::byte> ws(cpu::fia_workspace_size(p));

  double best = 1e30;
  for (int r = 0; r < reps + 1; ++r) {  // the first run warms caches and the pool
    const auto t0 = std::chrono::steady_clock::now();
    cpu::fia_run(p, d, ws.data(), ws.size(), threads);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r > 0) best = std::min(best, s);
  }
  // The FLOPs and bytes `kvflash bench pfa:...` counts (tools/roofline.hpp, prefill_work): the
  // visible pairs S (S + 1) / 2; Q, O, K and V once. cpu::fia_run is the vector kernel, so the
  // ceiling is the vector one, measured now on the same threads.
  const tools::Work work =
      tools::prefill_work(static_cast<double>(S) * (S + 1) / 2.0, S, S, N, KVN, D, 2, 2);
  const double bw = tools::measure_read_bandwidth_gbs(threads);
  const tools::ComputePeaks peaks = tools::measure_compute_peaks(threads);
  const tools::Ceiling ceiling = tools::compute_ceiling(tools::RowDtype::kBf16, false, peaks);
  const tools::Roofline roof = tools::roofline(work, best * 1e3, bw, ceiling);
  std::printf("fia prefill causal S=%lld threads=%d isa=%s: %.1f ms, %.1f GFLOP/s; %s\n",
              static_cast<long long>(S), threads, cpu::isa_name(cpu::active_isa()), best * 1e3,
              work.flops / best * 1e-9, tools::describe_roofline(roof, bw, ceiling).c_str());
  return 0;
}
