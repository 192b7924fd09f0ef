// The kvflash command-line program.
//   kvflash demo   the main job: embedded decode workloads, checked against the reference, timed
//   kvflash ifa    one IFA decode step of a shape given on the command line: timed, optionally
//                  checked
//   kvflash bench  problem strings (ifa:b8,s4096,..., sfa:b4,topk2048,...) or a named sweep: timed,
//                  checked, optionally written as JSON and CSV
//   kvflash info   the version and what this machine gives kvflash (ISA, threads, read bandwidth)
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <new>

#include "bench.hpp"
#include "bf16_peak.hpp"
#include "cli_options.hpp"
#include "cpu/isa.hpp"
#include "cpu/thread_pool.hpp"
#include "demo.hpp"
#include "ifa_workload.hpp"
#include "kvflash/version.h"
#include "membw.hpp"

namespace {

int run(const kvflash::tools::CliOptions& o) {
  using namespace kvflash;
  const tools::DemoOptions& demo = o.demo;
  if (o.command == tools::CliCommand::kBench && o.bench_list) return tools::list_bench(o) ? 0 : 1;
  if (o.command == tools::CliCommand::kInfo) std::printf("kvflash %s\n", kvflash_version());

  const int threads = demo.num_threads ? demo.num_threads : cpu::default_num_threads();
  std::printf("kvflash: isa %s (detected %s), %d threads\n", cpu::isa_name(cpu::active_isa()),
              cpu::isa_name(cpu::detected_isa()), threads);
  const double bw = o.skip_bandwidth ? 0.0
                                     : tools::measure_read_bandwidth_gbs(demo.num_threads,
                                                                         demo.quick ? 0.25 : 1.0);
  if (!o.skip_bandwidth)
    std::printf("machine read bandwidth (measured, %d threads): %.1f GB/s\n", threads, bw);
  if (o.command == tools::CliCommand::kInfo) return 0;
  if (o.command == tools::CliCommand::kBench) return tools::run_bench(o, bw) ? 0 : 1;
  if (o.command == tools::CliCommand::kIfa)
    return tools::run_ifa_workload(o.ifa, demo, bw, o.check) ? 0 : 1;

  // The SFA step is compute-bound: its line is judged against the compute peak (the faster of the
  // bf16 dot and fp32 FMA loops, as in `kvflash bench`), measured with the bandwidth.
  double peak = 0.0;
  if (!o.skip_bandwidth) {
    peak = std::max(tools::measure_bf16_peak_gflops(demo.num_threads),
                    tools::measure_fma_peak_gflops(demo.num_threads));
    if (peak > 0)
      std::printf("machine compute peak (measured, %d threads): %.0f GFLOP/s\n", threads, peak);
  }
  bool ok = tools::run_ifa_demo(demo, /*int8_kv=*/false, bw);
  ok = tools::run_ifa_demo(demo, /*int8_kv=*/true, bw) && ok;
  ok = tools::run_sfa_demo(demo, bw, peak) && ok;
  ok = tools::run_fia_demo(demo, bw, peak) && ok;
  std::printf("demo: %s\n", ok ? "all sample checks passed" : "SAMPLE CHECK FAILED");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  kvflash::tools::CliOptions options;
  const int rc = kvflash::tools::parse_cli(argc, argv, &options, std::cout, std::cerr);
  if (rc != kvflash::tools::kCliRun) return rc;
  try {
    return run(options);
  } catch (const std::bad_alloc&) {
    std::fflush(stdout);
    std::fprintf(stderr, "kvflash: out of memory building the workload\n");
    return 1;
  }
}
