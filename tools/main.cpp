// The kvflash command-line program.
//   kvflash demo   the main job: embedded model workloads (IFA, SFA, the indexer, FIA prefill and
//                  decode), checked against the reference, timed from cold caches
//   kvflash ifa    one IFA decode step of a shape given on the command line: timed, optionally
//                  checked
//   kvflash bench  problem strings (ifa:b8,s4096,..., sfa:b4,topk2048,..., li:b4,s32768,...,
//                  fia:..., pfa:..., kvcache:...) or a named sweep: timed, checked, optionally
//                  written as JSON and CSV
//   kvflash info   the version and what this machine gives kvflash (ISA, threads, read bandwidth,
//                  compute peaks)
#include <cstdio>
#include <iostream>
#include <new>

#include "bench.hpp"
#include "bf16_peak.hpp"
#include "cache_flush.hpp"
#include "cli_options.hpp"
#include "cpu/isa.hpp"
#include "cpu/thread_pool.hpp"
#include "demo.hpp"
#include "ifa_workload.hpp"
#include "kvflash/version.h"
#include "membw.hpp"
#include "roofline.hpp"
#include "tile_entries.hpp"

namespace {

int run(const kvflash::tools::CliOptions& given) {
  using namespace kvflash;
  if (given.command == tools::CliCommand::kBench && given.bench_list)
    return tools::list_bench(given) ? 0 : 1;
  tools::CliOptions o = given;
  // Timed calls start from cold caches unless --warm-cache (tools/cache_flush.hpp).
  if (!o.warm_cache) o.demo.flush_bytes = tools::default_flush_bytes();
  const tools::DemoOptions& demo = o.demo;
  if (o.command == tools::CliCommand::kInfo) std::printf("kvflash %s\n", kvflash_version());

  const int threads = demo.num_threads ? demo.num_threads : cpu::default_num_threads();
  std::printf("kvflash: isa %s (detected %s), %d threads\n", cpu::isa_name(cpu::active_isa()),
              cpu::isa_name(cpu::detected_isa()), threads);
  const double bw = o.skip_bandwidth ? 0.0
                                     : tools::measure_read_bandwidth_gbs(demo.num_threads,
                                                                         demo.quick ? 0.25 : 1.0);
  if (!o.skip_bandwidth)
    std::printf("machine read bandwidth (measured, %d threads): %.1f GB/s\n", threads, bw);
  // The compute ceilings, measured with the bandwidth (and skipped with it): the prefill, SFA and
  // indexer rows are judged against them. `kvflash ifa` is memory-bound and prints none.
  tools::ComputePeaks peaks;
  if (!o.skip_bandwidth && o.command != tools::CliCommand::kIfa) {
    peaks = tools::measure_compute_peaks(demo.num_threads);
    tools::print_compute_peaks(peaks, threads);
    tools::print_roofline_ceilings(bw, peaks, tools::tile_entries());
  }
  if (o.command == tools::CliCommand::kInfo) return 0;
  const bool rows = o.command != tools::CliCommand::kBench || !o.bench.empty();
  if (rows) tools::print_legend(demo);
  if (o.command == tools::CliCommand::kBench) return tools::run_bench(o, bw, peaks) ? 0 : 1;
  if (o.command == tools::CliCommand::kIfa)
    return tools::run_ifa_workload(o.ifa, demo, bw, o.check) ? 0 : 1;

  // Each row is judged against its roofline: the bf16 ceiling of the engine its operator runs on.
  const tools::TileEntries tiles = tools::tile_entries();
  bool ok = tools::run_ifa_demo(demo, /*int8_kv=*/false, bw);
  ok = tools::run_ifa_demo(demo, /*int8_kv=*/true, bw) && ok;
  const auto bf16 = [&](bool on_tiles) {
    return tools::compute_ceiling(tools::RowDtype::kBf16, on_tiles, peaks);
  };
  ok = tools::run_sfa_demo(demo, bw, bf16(tiles.sfa)) && ok;
  ok = tools::run_dsa_demo(demo, bw, bf16(tiles.li)) && ok;
  ok = tools::run_fia_demo(demo, bw, bf16(tiles.fia)) && ok;
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
