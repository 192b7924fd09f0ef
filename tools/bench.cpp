#include "bench.hpp"

#include <cstdio>
#include <string>
#include <vector>

#include "bf16_peak.hpp"
#include "cpu/isa.hpp"
#include "cpu/thread_pool.hpp"
#include "ifa_workload.hpp"

namespace kvflash::tools {
namespace {

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

bool write_json(const CliOptions& o, double bw, double peak,
                const std::vector<IfaWorkloadResult>& results) {
  std::FILE* f = std::fopen(o.bench_json.c_str(), "w");
  if (!f) {
    std::fprintf(stderr, "kvflash bench: cannot write %s\n", o.bench_json.c_str());
    return false;
  }
  const int threads = o.demo.num_threads ? o.demo.num_threads : cpu::default_num_threads();
  std::fprintf(f, "{\n  \"isa\": \"%s\",\n  \"threads\": %d,\n  \"iterations\": %d,\n",
               cpu::isa_name(cpu::active_isa()), threads, o.demo.iterations);
  std::fprintf(f, "  \"read_bandwidth_gbs\": %.3f,\n  \"bf16_peak_gflops\": %.3f,\n", bw, peak);
  std::fprintf(f, "  \"results\": [");
  for (size_t i = 0; i < results.size(); ++i) {
    const IfaWorkloadShape& s = o.bench[i];
    const IfaWorkloadResult& r = results[i];
    std::fprintf(
        f,
        "%s\n    {\"problem\": %s, \"batch\": %zu, \"kv_len\": %lld, \"kv_dtype\": \"%s\", "
        "\"paged\": %lld, \"ms_per_call\": %.6f, \"kv_bytes\": %.0f, \"gbs\": %.4f, "
        "\"gflops\": %.4f, \"bw_fraction\": %.4f, \"check_passed\": %s}",
        i ? "," : "", json_string(s.name).c_str(), s.lengths.size(),
        static_cast<long long>(s.lengths.empty() ? 0 : s.lengths[0]), dtype_name(s.kv_dtype),
        static_cast<long long>(s.block_size), r.ms_per_call, r.kv_bytes, r.gbs, r.gflops,
        bw > 0 ? r.gbs / bw : 0.0, r.passed ? "true" : "false");
  }
  std::fprintf(f, "\n  ]\n}\n");
  return std::fclose(f) == 0;
}

}  // namespace

bool run_bench(const CliOptions& o, double read_bandwidth_gbs) {
  // The compute ceiling, measured like the bandwidth (skipped with it by --no-bandwidth).
  const double peak = o.skip_bandwidth ? 0.0 : measure_bf16_peak_gflops(o.demo.num_threads);
  if (peak > 0)
    std::printf("bf16 dot-product peak (vdpbf16ps loop, measured): %.0f GFLOP/s\n", peak);
  std::vector<IfaWorkloadResult> results(o.bench.size());
  bool ok = true;
  for (size_t i = 0; i < o.bench.size(); ++i) {
    std::printf("bench [%zu/%zu] %s\n", i + 1, o.bench.size(), o.bench[i].name.c_str());
    std::fflush(stdout);
    ok = run_ifa_workload(o.bench[i], o.demo, read_bandwidth_gbs, /*check_sample=*/true,
                          &results[i]) &&
         ok;
  }
  if (!o.bench_json.empty()) ok = write_json(o, read_bandwidth_gbs, peak, results) && ok;
  std::printf("bench: %s\n", ok ? "all problems ran and passed their checks" : "FAILED");
  return ok;
}

}  // namespace kvflash::tools
